-- A chunk attempt raised: record the error, then either fail the job (attempt cap reached) or
-- count a republish (the caller publishes the chunk again at once, no countdown/ETA).
--
-- KEYS: 1 meta, 2 counters, 3 done, 4 chunks, 5 active-jobs set, 6 request-id key (or meta)
-- ARGV: 1 job id, 2 chunk index, 3 now, 4 TTL seconds, 5 max attempts, 6 error text,
--       7 the failure message to use if the cap is reached
-- Returns {'state', state}, {'done', state}, {'failed', error} or {'retry', attempts so far}.
local meta, done, chunks, active = KEYS[1], KEYS[3], KEYS[4], KEYS[5]
local job_id, c, now, ttl, max_attempts = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])

local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {'state', state or ''} end
if redis.call('GETBIT', done, c) == 1 then return {'done', state} end
redis.call('HSET', chunks, 'e:' .. c, ARGV[6])
redis.call('HDEL', chunks, 'l:' .. c)  -- the attempt is over; its retry is a new message
local attempts = tonumber(redis.call('HGET', chunks, 's:' .. c) or '0')
if attempts >= max_attempts then
  local err = ARGV[7] .. '; last error: ' .. ARGV[6]
  finish(meta, {meta, KEYS[2], done, chunks, KEYS[6]}, active, job_id, 'FAILED', now, ttl, err)
  return {'failed', err}
end
redis.call('HINCRBY', chunks, 'p:' .. c, 1)
redis.call('HSET', chunks, 'q:' .. c, now)
return {'retry', tostring(attempts)}
