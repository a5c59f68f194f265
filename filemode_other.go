//go:build !unix

package main

// restrictFileModes: there is no umask to set outside Unix.
func restrictFileModes() {}
