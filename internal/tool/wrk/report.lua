-- protobench's script for wrk and wrk2 (installed in the tools image as
-- /usr/share/protobench/wrk/report.lua; the Go adapter in internal/tool/wrk embeds this file).
--
-- Script arguments (after "--" on the wrk command line), all key=value:
--   method=GetUser|Echo|Multiply|Divide   the contract method (default GetUser)
--   payload_bytes=N                       Echo payload size (default 0)
--   a=N b=N                               Multiply/Divide operands
-- The URL's path is ignored for the request: init() sets the path, HTTP method and body the
-- REST server expects for the contract method (servers/rest).
--
-- done() prints one JSON line, prefixed by nothing and starting with {"protobench_wrk":1, so the
-- adapter reads machine output instead of parsing wrk's human report. Durations and latencies are
-- microseconds, as wrk reports them.

-- payload returns n bytes of the contract payload (internal/contract.Payload): the pattern
-- repeated and cut at n, byte for byte what every other protocol sends.
local function payload(n)
  local pattern = "protobench-payload-0123456789abcdefghijklmnopqrstuvwxyz\n"
  local reps = math.floor(n / #pattern) + 1
  return string.sub(string.rep(pattern, reps), 1, n)
end

-- init runs once per wrk thread; wrk builds the request from the wrk table after it returns,
-- so the request string is formatted once per thread, not per request.
function init(args)
  local opts = { method = "GetUser", payload_bytes = "0", a = "1234567", b = "89", id = "42" }
  for _, arg in ipairs(args) do
    local k, v = string.match(arg, "^([%w_]+)=(.*)$")
    if k == nil or opts[k] == nil then
      error("report.lua: unknown script argument '" .. arg .. "' (want method=, payload_bytes=, id=, a=, b=)")
    end
    opts[k] = v
  end
  local m = opts.method
  if m == "GetUser" then
    wrk.method = "GET"
    wrk.path = "/v1/users/" .. opts.id
    wrk.body = nil
  elseif m == "Echo" then
    wrk.method = "POST"
    wrk.path = "/v1/echo"
    wrk.headers["Content-Type"] = "application/octet-stream"
    wrk.body = payload(tonumber(opts.payload_bytes))
  elseif m == "Multiply" or m == "Divide" then
    wrk.method = "POST"
    wrk.path = "/v1/" .. string.lower(m)
    wrk.headers["Content-Type"] = "application/json"
    wrk.body = '{"a":' .. opts.a .. ',"b":' .. opts.b .. '}'
  else
    error("report.lua: method '" .. m .. "' is not served over REST (want GetUser, Echo, Multiply, Divide)")
  end
end

-- done prints the run's totals and latency summary as one JSON line.
function done(summary, latency, requests)
  local e = summary.errors
  local function p(q) return latency:percentile(q) end
  io.write(string.format(
    '{"protobench_wrk":1,"duration_us":%d,"requests":%d,"bytes":%d,' ..
    '"errors":{"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d},' ..
    '"latency_us":{"min":%d,"mean":%.3f,"stdev":%.3f,"max":%d,' ..
    '"p50":%d,"p75":%d,"p90":%d,"p99":%d,"p999":%d,"p9999":%d}}\n',
    summary.duration, summary.requests, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.min, latency.mean, latency.stdev, latency.max,
    p(50), p(75), p(90), p(99), p(99.9), p(99.99)))
end
