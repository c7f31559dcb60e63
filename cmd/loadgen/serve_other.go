//go:build !linux

package main

import "syscall"

// setParentDeathSignal is Linux-only; elsewhere a crashed load generator
// can leave the server it started running.
func setParentDeathSignal(*syscall.SysProcAttr) {}
