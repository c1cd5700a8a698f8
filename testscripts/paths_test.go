package testscripts

import "github.com/loopx-dev/loopx/lease"

func todoPath(goal, todo string) string  { return lease.TodoPath(goal, todo) }
func leasePath(goal, todo string) string { return lease.LeasePath(goal, todo) }
