package luavm

import lua "github.com/yuin/gopher-lua"

// For the package's external tests only: the VM's Lua state and module,
// which the runtime keeps to itself.

// LState is the VM's main Lua state.
func (vm *VM) LState() *lua.LState { return vm.l }

// Module is the script's module table.
func (vm *VM) Module() *lua.LTable { return vm.module }
