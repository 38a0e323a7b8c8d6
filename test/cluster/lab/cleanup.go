package lab

import (
	"errors"
	"fmt"
	"sync"
)

// cleanups is a stack of undo steps: whatever the lab creates registers how to remove it
// right after creating it, so Close (or a failed Start) removes exactly what exists.
type cleanups struct {
	mu    sync.Mutex
	steps []cleanupStep
}

type cleanupStep struct {
	what string
	fn   func() error
}

// add pushes a step; steps run in reverse order.
func (c *cleanups) add(what string, fn func() error) {
	c.mu.Lock()
	c.steps = append(c.steps, cleanupStep{what, fn})
	c.mu.Unlock()
}

// run pops and runs every step, also after failures, and joins their errors.
func (c *cleanups) run() error {
	c.mu.Lock()
	steps := c.steps
	c.steps = nil
	c.mu.Unlock()
	var errs []error
	for i := len(steps) - 1; i >= 0; i-- {
		if err := steps[i].fn(); err != nil {
			errs = append(errs, fmt.Errorf("remove %s: %w", steps[i].what, err))
		}
	}
	return errors.Join(errs...)
}
