package main

import "syscall"

// setParentDeathSignal asks the kernel to send the server SIGTERM when the
// load generator dies (a crash must not leave the server running).
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGTERM }
