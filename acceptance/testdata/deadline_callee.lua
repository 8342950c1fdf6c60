-- deadline_callee: a method reporting the milliseconds left of its run.
local M = {}
function M.left(ctx) return ctx.deadline - shield.now() end
return M
