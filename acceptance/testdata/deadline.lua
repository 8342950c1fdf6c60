-- deadline: the services behind the declared-budget tests
-- (docs/protocol.md "Deadlines"). Each reports the milliseconds left of
-- the budget its run was given.
local M = {}

function M.left(ctx, client, req) return ctx.deadline - shield.now() end

-- left_call: what a shield.call to callee has left, under this run's budget.
function M.left_call(ctx, client, req) return shield.call("callee", "left") end

return M
