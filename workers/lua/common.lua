-- Shared helpers, prepended to every script of workers/lua by workers.store (Redis 6.2+, Lua 5.1).
-- Numbers that may exceed 2^53 (counter increments) are never tonumber()'d: HINCRBY takes the
-- decimal string as it is. Every check that can refuse comes before the first write, because a
-- script that errors half-way does not roll back.

local ACTIVE = {QUEUED = true, RUNNING = true}

-- Move a job to a final state: state, finished_at, error, out of the active set, and the TTL on
-- every key of the job. `keys` is the list of the job's keys; `active` the active-jobs set.
local function finish(meta, keys, active, job_id, state, now, ttl, err)
  redis.call('HSET', meta, 'state', state, 'finished_at', now, 'updated_at', now)
  if err and err ~= '' then redis.call('HSET', meta, 'error', err) end
  redis.call('SREM', active, job_id)
  for _, key in ipairs(keys) do redis.call('EXPIRE', key, ttl) end
end

-- Drop the per-chunk bookkeeping fields (starts, last start, republishes, last publish, error,
-- lease deadline, the reconciler's "missing" mark).
local function forget_chunk(chunks, c)
  redis.call('HDEL', chunks, 's:' .. c, 't:' .. c, 'p:' .. c, 'q:' .. c, 'e:' .. c, 'l:' .. c,
             'm:' .. c)
end
