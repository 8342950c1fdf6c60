-- calc: methods another node's front calls.
local M = {}
local notes = {}

function M.add(ctx, x) return x.a + x.b end
function M.fail(ctx) shield.error("calc.bad_input", "nope") end
function M.crash(ctx) error("boom") end
function M.slow(ctx, ms) shield.sleep(ms) return "late" end
-- budget -> the milliseconds left of this run's deadline
function M.budget(ctx) return ctx.deadline - shield.now() end
function M.note(ctx, x) notes[#notes + 1] = x end
function M.notes(ctx) return shield.array(notes) end

return M
