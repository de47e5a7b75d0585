-- wrk script for bench/http_filter.sh: POSTs one request body (file $BODY_FILE) to the URL's path
-- on every request, and prints one machine-readable summary line at the end:
--   RESULT requests=N duration_s=S rps=R p50_ms=A p90_ms=B p99_ms=C max_ms=D non2xx=E errors=F
-- (wrk counts HTTP statuses >= 400 as errors.status; 3xx would count as success.)
local path = os.getenv("BODY_FILE")
if path == nil then error("BODY_FILE is not set") end
local f = assert(io.open(path, "rb"))
local body = f:read("*a")
f:close()

wrk.method = "POST"
wrk.body = body
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"

function done(summary, latency, requests)
  local s = summary.duration / 1e6
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_s=%.2f rps=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f max_ms=%.3f non2xx=%d errors=%d\n",
    summary.requests, s, summary.requests / s,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency.max / 1000, e.status, e.connect + e.read + e.write + e.timeout))
end
