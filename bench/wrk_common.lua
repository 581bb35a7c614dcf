-- What the bench's wrk scripts share (loaded by each with dofile, from the folder the script is in):
-- each thread numbered (n, from 1) as wrk sets it up, and the closing line the Python side reads:
-- RESULT {requests, seconds, items, errors, p50_ms, p99_ms}, summed over the threads' "items" and
-- "errors", after an ERROR line for each thread's first error (its "first_error", when it keeps one).
local threads = {}
local counter = 0

function setup(thread)
  counter = counter + 1
  thread:set("n", counter)
  table.insert(threads, thread)
end

function done(summary, latency, requests)
  local items_sum, errors_sum = 0, 0
  for _, t in ipairs(threads) do
    items_sum = items_sum + t:get("items")
    errors_sum = errors_sum + t:get("errors")
    local first = t:get("first_error")
    if first ~= nil and first ~= "" then io.write("ERROR " .. first .. "\n") end
  end
  io.write(string.format('RESULT {"requests": %d, "seconds": %f, "items": %d, "errors": %d, "p50_ms": %f, "p99_ms": %f}\n',
    summary.requests, summary.duration / 1e6, items_sum, errors_sum,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000))
end
