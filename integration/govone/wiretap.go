package main

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
)

// wiretap is a TCP proxy that forwards bytes unchanged and counts the
// OP_COMPRESSED messages the server sends, by compressor id, so the
// scenario can tell which compressor the handshake settled on.
type wiretap struct {
	ln         net.Listener
	mu         sync.Mutex
	compressed map[byte]int // compressor id (1 snappy, 2 zlib, 3 zstd) -> messages
	plain      int
}

func startWiretap(target string) (*wiretap, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	w := &wiretap{ln: ln, compressed: map[byte]int{}}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { _, _ = io.Copy(up, c); up.Close() }()
			go func() { w.server(up, c); c.Close() }()
		}
	}()
	return w, nil
}

// server copies the server's messages to the client, one at a time.
func (w *wiretap) server(from, to net.Conn) {
	var header [25]byte
	for {
		if _, err := io.ReadFull(from, header[:4]); err != nil {
			return
		}
		size := int(binary.LittleEndian.Uint32(header[:4]))
		if size < 16 {
			return
		}
		msg := make([]byte, size)
		copy(msg, header[:4])
		if _, err := io.ReadFull(from, msg[4:]); err != nil {
			return
		}
		w.mu.Lock()
		if binary.LittleEndian.Uint32(msg[12:16]) == 2012 && size > 24 {
			w.compressed[msg[24]]++
		} else {
			w.plain++
		}
		w.mu.Unlock()
		if _, err := to.Write(msg); err != nil {
			return
		}
	}
}

func (w *wiretap) counts() (map[byte]int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := map[byte]int{}
	for k, v := range w.compressed {
		m[k] = v
	}
	return m, w.plain
}

func (w *wiretap) close() { w.ln.Close() }
