//go:build unix

package main

import "syscall"

// restrictFileModes makes every file and directory the server creates
// (Badger's tables, value log, write-ahead files and lock among them)
// readable by its owner alone, whatever the shell's umask: Badger opens
// some of its files 0666. mongod does the same unless told to honour the
// system umask.
func restrictFileModes() {
	syscall.Umask(0o077)
}
