//go:build !linux

package gateway

// canPark: parking needs epoll (park_linux.go); elsewhere read loops wait
// on their own goroutines.
const canPark = false

// parker parks nothing here.
type parker struct{}

func (p *parker) park(*conn) bool { return false }
func (p *parker) wake(*conn)      {}
func (p *parker) stop()           {}
