-- A chunk task starts: decide whether to play it, and count the attempt.
--
-- KEYS: 1 meta, 2 counters, 3 done, 4 chunks, 5 active-jobs set, 6 request-id key (or meta)
-- ARGV: 1 job id, 2 chunk index, 3 now, 4 TTL seconds, 5 max attempts, 6 lease seconds,
--       7 the failure message to use if this attempt is past the cap
-- A started attempt holds a lease on its chunk (field l:<chunk>, a deadline) that its worker
-- renews while it plays (lease_chunk.lua); the reconciler leaves a leased chunk alone.
-- Returns {'state', state} the job is not QUEUED/RUNNING (state '' if it is gone);
--         {'done', state} the chunk is merged already; {'failed', error} past the attempt cap:
--         the job is now FAILED; {'run', attempt} play it (attempt counts from 1).
local meta, done, chunks, active = KEYS[1], KEYS[3], KEYS[4], KEYS[5]
local job_id, c, now, ttl, max_attempts = ARGV[1], ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5])

local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {'state', state or ''} end
if redis.call('GETBIT', done, c) == 1 then return {'done', state} end
local attempt = redis.call('HINCRBY', chunks, 's:' .. c, 1)
redis.call('HSET', chunks, 't:' .. c, now, 'l:' .. c, tonumber(now) + tonumber(ARGV[6]))
redis.call('HDEL', chunks, 'm:' .. c)
redis.call('EXPIRE', chunks, ttl)  -- bookkeeping expires with an abandoned job
if attempt > max_attempts then
  local last = redis.call('HGET', chunks, 'e:' .. c)
  local err = ARGV[7]
  if last then
    err = err .. '; last error: ' .. last
  else
    err = err .. '; the worker running it was lost (killed, out of memory or past the hard time limit)'
  end
  finish(meta, {meta, KEYS[2], done, chunks, KEYS[6]}, active, job_id, 'FAILED', now, ttl, err)
  return {'failed', err}
end
if state == 'QUEUED' then redis.call('HSET', meta, 'state', 'RUNNING', 'started_at', now) end
return {'run', tostring(attempt)}
