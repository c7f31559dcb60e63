package kubetest

import (
	"os/exec"
	"syscall"
)

// sysProcAttr puts the child in a process group of its own (so that
// stopping it stops what it started) and kills it when the test binary dies.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

func killGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, sig)
	}
}
