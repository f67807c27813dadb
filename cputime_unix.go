//go:build unix

package main

import "syscall"

// processCPU is the user and system CPU this process used, in nanoseconds.
func processCPU() (int64, bool) {
	var usage syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &usage) != nil {
		return 0, false
	}
	return usage.Utime.Nano() + usage.Stime.Nano(), true
}
