package main

import (
	"os"
	"path/filepath"
	"syscall"
)

// Crash points let crash tests kill a cluster node (SIGKILL, as kill -9
// does) at a chosen step that a test cannot time from outside: serve
// --enable-test-commands --crash-at <point>. A node crashes at a point
// once: it leaves a file in its data directory saying so, and started
// again with the same flags it goes on.
const (
	// crashMoveRemoved: the writer, moving a replica, has removed the
	// old replica from its group but not yet recorded the move's end.
	crashMoveRemoved = "move-removed"
)

// crashPoint kills this process at point when serve was told to.
func (h *clusterHandler) crashPoint(point string) {
	if !h.o.testCommands || h.o.crashAt != point {
		return
	}
	marker := filepath.Join(h.o.dataDir, "crashed-at-"+point)
	if _, err := os.Stat(marker); err == nil {
		return
	}
	f, err := os.Create(marker)
	if err != nil {
		return
	}
	_ = f.Sync()
	_ = f.Close()
	h.logger.Warn("crashing at a crash point", "point", point)
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {} // the signal ends the process
}
