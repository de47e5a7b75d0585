// The target that builds tests/pch.h's precompiled header for every test binary to reuse (see
// tests/CMakeLists.txt, GPUFAIR_PCH); it has no code of its own.
