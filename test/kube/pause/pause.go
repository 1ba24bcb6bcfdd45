// Command pause is the sandbox ("pause") image's only program for the real-kubelet tests: it holds a pod's
// namespaces open, reaps the orphans its pod leaves (it is PID 1 of a shared PID namespace), and exits on SIGINT or
// SIGTERM. Built statically into a scratch image by test/support/kube/localImages.ts, since no registry is at hand.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	signals := make(chan os.Signal, 8)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for sig := range signals {
		if sig != syscall.SIGCHLD {
			return
		}
		for {
			var status syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &status, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
