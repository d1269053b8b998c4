-- wrk script: single-event publishes to a running hookd, a cross-check of
-- `hookd bench --publish-only --batch 1` with a load generator that is not
-- hookd's (docs/performance.md, "Cross-check with wrk"). Each request is
-- POST /api/v1/events with a fresh subject and seq; KEY is an API key.
--
--   KEY=hkd_… wrk -t1 -c32 -d10s --latency -s internal/bench/wrk/publish.lua http://127.0.0.1:8080
--
-- wrk counts answers other than 2xx/3xx as "Non-2xx or 3xx responses";
-- count the events stored afterwards to see every 202 was one event.
local key = os.getenv("KEY")
if key == nil or key == "" then
  error("set KEY to an API key: hookd apikey create --owner NAME")
end
wrk.method = "POST"
wrk.headers["Authorization"] = "Bearer " .. key
wrk.headers["Content-Type"] = "application/json"
local n = 0
request = function()
  n = n + 1
  local body = '{"type":"bench.event0","subject":"bench://item/' .. n ..
    '","tenant":"tenant_bench","data":{"seq":' .. n .. ',"ts":1}}'
  return wrk.format(nil, "/api/v1/events", nil, body)
end
