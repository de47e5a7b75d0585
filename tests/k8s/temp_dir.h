// A directory of its own for one test (named after the process and the test), removed with it.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <unistd.h>

namespace gpufair::k8s {

class TempDir {
 public:
  TempDir()
      : path_(std::filesystem::temp_directory_path() /
              ("gpufair-test-" + std::to_string(::getpid()) + "-" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name())) {
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Writes (or replaces) the file `name` with `content`; its path.
  std::string write(const std::string& name, const std::string& content) const {
    auto file = path_ / name;
    std::ofstream(file, std::ios::trunc) << content;
    return file.string();
  }
  std::filesystem::path path(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace gpufair::k8s
