-- Merge one chunk's counters into its job, atomically (docs/design.md, "Statistics").
--
-- KEYS: 1 meta (hash), 2 counters (hash), 3 done (bitmap, one bit per chunk), 4 chunks (hash of
--       per-chunk bookkeeping), 5 active-jobs set, 6 the request-id key (or the meta key again)
-- ARGV: 1 job id, 2 chunk index, 3 games in the chunk, 4 now (unix seconds, text), 5 TTL seconds,
--       6 n = number of additive pairs, then n (field, increment) pairs, then (field, value) pairs
--       of 'min|' / 'max|' fields, which keep the smaller / larger value.
-- Returns {code, state}: code -1 the job is not QUEUED/RUNNING (nothing changed), 0 the chunk was
-- already merged (a duplicate: nothing changed), 1 merged, 2 merged and the job is now SUCCEEDED.
local meta, counters, done, chunks, active = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local job_id, c, games, now, ttl = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local state = redis.call('HGET', meta, 'state')
if not state or not ACTIVE[state] then return {-1, state or ''} end
local total = tonumber(redis.call('HGET', meta, 'chunks_total'))
if tonumber(c) >= total then return redis.error_reply('chunk index ' .. c .. ' out of range') end
if redis.call('SETBIT', done, c, 1) == 1 then return {0, state} end

merge_counters(counters, 6)

if state == 'QUEUED' then
  redis.call('HSET', meta, 'state', 'RUNNING', 'started_at', now)
  state = 'RUNNING'
end
forget_chunk(chunks, c)
local chunks_done = redis.call('HINCRBY', meta, 'chunks_done', 1)
redis.call('HINCRBY', meta, 'games_done', games)
redis.call('HSET', meta, 'updated_at', now)
local keys = {meta, counters, done, chunks, KEYS[6]}
if chunks_done >= total then
  redis.call('DEL', chunks)
  finish(meta, keys, active, job_id, 'SUCCEEDED', now, ttl, '')
  return {2, 'SUCCEEDED'}
end
-- Refresh the idle expiry: a job that nobody works on for a whole TTL goes away.
for _, key in ipairs(keys) do redis.call('EXPIRE', key, ttl) end
return {1, state}
