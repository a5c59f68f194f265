package cluster

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lni/dragonboat/v4/config"
	pb "github.com/lni/dragonboat/v4/raftpb"
	"github.com/lni/vfs"
)

// logSyncer decides when a node's Raft log files reach the disk.
//
// With an interval of 0 every Raft update that saves entries is fsynced
// before it counts, as tan does it. With an interval above 0 the log's
// fsync of entries is deferred: tan still writes each update to its file
// (the operating system holds it, so it survives the process being
// killed), and its fsync becomes a mark that the file is dirty, which the
// syncer's own loop fsyncs once per interval. A write is then
// acknowledged once a majority has it in its log, and reaches those disks
// within the interval (MongoDB's journal commit interval plays the same
// part for writes without j: true). An update that must not be lost on a
// power failure is fsynced before the log store returns, with every dirty
// file of the node: one that changes the replica's term or vote or saves
// a snapshot (Raft's safety rests on them), one whose entries are not
// plain application entries (membership changes), and one that saves a
// durable entry (durableEntryVersion): a write with j: true ends with one,
// so a majority has fsynced it when it commits.
type logSyncer struct {
	interval time.Duration
	logger   *slog.Logger

	mu    sync.Mutex
	files map[*lazyFile]struct{} // the open log files
	stop  chan struct{}
	done  chan struct{}
	err   atomic.Pointer[error] // the first failed fsync: nothing is durable after it

	fsyncs atomic.Uint64 // of deferred log files, by the loop or forced
}

func newLogSyncer(interval time.Duration, logger *slog.Logger) *logSyncer {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &logSyncer{interval: interval, logger: logger, files: map[*lazyFile]struct{}{}}
	if interval > 0 {
		s.stop, s.done = make(chan struct{}), make(chan struct{})
		go s.loop()
	}
	return s
}

// lazy is whether entries' fsyncs are deferred.
func (s *logSyncer) lazy() bool { return s != nil && s.interval > 0 }

func (s *logSyncer) loop() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.syncDirty(); err != nil {
				// Every later save of the log fails with it, which
				// dragonboat takes as fatal.
				s.logger.Error("Raft log fsync failed: the node can save no more of its log", "err", err)
				return
			}
		}
	}
}

// close stops the loop after a last sync of what is dirty.
func (s *logSyncer) close() {
	if s.stop == nil {
		return
	}
	close(s.stop)
	<-s.done
	_ = s.syncDirty()
}

// syncDirty fsyncs every open log file written since its last fsync, and
// returns once each one written before the call is on disk.
func (s *logSyncer) syncDirty() error {
	if p := s.err.Load(); p != nil {
		return *p
	}
	s.mu.Lock()
	files := make([]*lazyFile, 0, len(s.files))
	for f := range s.files {
		files = append(files, f)
	}
	s.mu.Unlock()
	for _, f := range files {
		if err := f.syncIfDirty(); err != nil {
			// After a failed fsync the kernel may have dropped the dirty
			// pages: what was written cannot be made durable by trying
			// again, and no later fsync may be taken for it.
			err = fmt.Errorf("cluster: fsync of Raft log %s: %w", f.name, err)
			s.err.CompareAndSwap(nil, &err)
			return err
		}
	}
	return nil
}

// tanLogName matches the names of tan's log files (<number>.log).
var tanLogName = regexp.MustCompile(`^[0-9]+\.log$`)

// logFS hands tan's log files out as lazyFiles when the syncer is lazy.
type logFS struct {
	config.IFS
	s *logSyncer
}

func (f logFS) Create(name string) (vfs.File, error) {
	file, err := f.IFS.Create(name)
	return f.wrap(name, file, err)
}

func (f logFS) OpenForAppend(name string) (vfs.File, error) {
	file, err := f.IFS.OpenForAppend(name)
	return f.wrap(name, file, err)
}

func (f logFS) ReuseForWrite(oldname, newname string) (vfs.File, error) {
	file, err := f.IFS.ReuseForWrite(oldname, newname)
	return f.wrap(newname, file, err)
}

func (f logFS) wrap(name string, file vfs.File, err error) (vfs.File, error) {
	if err != nil || !f.s.lazy() || !tanLogName.MatchString(filepath.Base(name)) {
		return file, err
	}
	lf := &lazyFile{File: file, s: f.s, name: name}
	f.s.mu.Lock()
	f.s.files[lf] = struct{}{}
	f.s.mu.Unlock()
	return lf, nil
}

// lazyFile is a log file whose Sync marks it dirty; the syncer fsyncs it.
type lazyFile struct {
	vfs.File
	s     *logSyncer
	name  string
	dirty atomic.Bool
	mu    sync.Mutex // held across an fsync: a caller finding the file clean waits for the fsync that cleaned it
}

func (f *lazyFile) Sync() error {
	if p := f.s.err.Load(); p != nil {
		return *p
	}
	f.dirty.Store(true)
	return nil
}

func (f *lazyFile) syncIfDirty() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.dirty.Swap(false) {
		return nil
	}
	if err := f.File.Sync(); err != nil {
		f.dirty.Store(true)
		return err
	}
	f.s.fsyncs.Add(1)
	return nil
}

// Close fsyncs what the file holds unsynced: tan closes a log file when it
// starts the next, and nothing else would reach the closed one.
func (f *lazyFile) Close() error {
	err := f.syncIfDirty()
	f.s.mu.Lock()
	delete(f.s.files, f)
	f.s.mu.Unlock()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	return err
}

// mustSync is whether an update has to be on disk before the log store
// returns, with prev the replica's last saved State (known false: none
// saved yet).
func mustSync(u *pb.Update, prev pb.State, known bool) bool {
	if !pb.IsEmptySnapshot(u.Snapshot) {
		return true
	}
	if !pb.IsEmptyState(u.State) && (!known || u.State.Term != prev.Term || u.State.Vote != prev.Vote) {
		return true
	}
	for i := range u.EntriesToSave {
		if cmd, ok := entryPayload(&u.EntriesToSave[i]); !ok || durableEntry(cmd) {
			return true
		}
	}
	return false
}

// entryPayload is the command of an application entry as proposed (ok
// false: another kind of entry, or one whose payload is compressed).
// dragonboat stores a proposed command as an encoded entry: a header
// byte (format version 0 in the high four bits, the compression in the
// next three, a session flag in the last), then the command, when
// uncompressed, as it was; an entry without a command (a new leader's)
// is a plain application entry.
func entryPayload(e *pb.Entry) ([]byte, bool) {
	switch e.Type {
	case pb.ApplicationEntry:
		return e.Cmd, true
	case pb.EncodedEntry:
		if len(e.Cmd) == 0 || e.Cmd[0]&0xfe != 0 {
			return nil, false
		}
		return e.Cmd[1:], true
	}
	return nil, false
}
