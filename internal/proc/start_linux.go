package proc

import (
	"os/exec"
	"runtime"
	"sync"
	"syscall"
)

// startReq is one child to start on the spawner thread.
type startReq struct {
	cmd  *exec.Cmd
	done chan error
}

// spawner is the channel of the goroutine that starts every child. It is
// made on first use and serves for the life of the process.
var spawner = sync.OnceValue(func() chan startReq {
	ch := make(chan startReq)
	// Never stops, by design: the children it starts get SIGKILL when the
	// thread that forked them exits (prctl PR_SET_PDEATHSIG follows the
	// parent thread, not the process; golang/go#27505), so that thread must
	// live as long as the process. Locking the goroutine to its thread and
	// never returning keeps the thread; the Go runtime only ends a thread
	// whose locked goroutine exits.
	go spawnLoop(ch)
	return ch
})

// spawnLoop starts the children sent on ch, one at a time, from one
// locked OS thread.
func spawnLoop(ch chan startReq) {
	runtime.LockOSThread()
	for r := range ch {
		r.done <- r.cmd.Start()
	}
}

// Start starts cmd so that the kernel kills it (SIGKILL) when this process
// dies, however it dies: SIGKILL, a crash, or a clean exit that skipped
// stopping it. Closing a child's stdin is not enough, since some agents
// keep running when it closes. Start keeps any SysProcAttr fields cmd
// already has (a process group, namespaces) and adds Pdeathsig.
// Grandchildren are not covered unless the child does the same; every
// buzzbox identity that starts children does.
func Start(cmd *exec.Cmd) error {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	done := make(chan error, 1)
	spawner() <- startReq{cmd: cmd, done: done}
	return <-done
}
