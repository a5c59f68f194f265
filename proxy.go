package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"time"

	"github.com/parsecdb/parsec/wire"
)

// upstream is one client connection's link to the cluster's writer: a
// connection of its own to the writer's client port, over which a
// standby forwards the commands it does not answer itself, so that a
// client connected to any node (mongosh given one host, a driver reading
// from secondaries) gets the writer's answers.
type upstream struct {
	addr  string
	nc    net.Conn
	br    *bufio.Reader
	buf   []byte
	reqID int32
}

func dialUpstream(ctx context.Context, addr string) (*upstream, error) {
	return dialUpstreamFrom(ctx, addr, nil)
}

// dialUpstreamFrom is dialUpstream from a local address (nil: any).
func dialUpstreamFrom(ctx context.Context, addr string, local net.Addr) (*upstream, error) {
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: local}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if tc, ok := nc.(*net.TCPConn); ok {
		_ = tc.SetNoDelay(true)
	}
	return &upstream{addr: addr, nc: nc, br: bufio.NewReader(nc)}, nil
}

// roundTrip sends req as an OP_MSG and returns the reply's body (a copy),
// or nil without waiting when the client expects no reply.
func (u *upstream) roundTrip(ctx context.Context, req *wire.Request) ([]byte, error) {
	if req.OpCode != wire.OpMsg {
		return nil, fmt.Errorf("only OP_MSG is forwarded, not %v", req.OpCode)
	}
	u.reqID++
	m := &wire.Msg{Header: wire.Header{RequestID: u.reqID, OpCode: wire.OpMsg}}
	if req.MoreToCome {
		m.Flags |= wire.FlagMoreToCome
	}
	m.Sections = append(m.Sections, wire.Section{Kind: wire.SectionBody, Documents: [][]byte{req.Body}})
	m.Sections = append(m.Sections, req.Sequences...)
	if dl, ok := ctx.Deadline(); ok {
		_ = u.nc.SetDeadline(dl)
	} else {
		_ = u.nc.SetDeadline(time.Time{})
	}
	if _, err := u.nc.Write(wire.Encode(nil, m)); err != nil {
		return nil, err
	}
	if req.MoreToCome {
		return nil, nil
	}
	for {
		frame, err := wire.ReadFrame(u.br, u.buf, wire.MaxMessageSize)
		if err != nil {
			return nil, err
		}
		u.buf = frame[:0]
		msg, err := wire.Decode(frame)
		if err != nil {
			return nil, err
		}
		if c, ok := msg.(*wire.Compressed); ok {
			if msg, err = c.Open(); err != nil {
				return nil, err
			}
		}
		if msg.Hdr().ResponseTo != u.reqID {
			continue // a reply to a request whose reply was not awaited
		}
		reply, ok := msg.(*wire.Msg)
		if !ok {
			return nil, fmt.Errorf("the writer answered with %v", msg.Hdr().OpCode)
		}
		return append([]byte(nil), reply.Body()...), nil
	}
}

func (u *upstream) close() { _ = u.nc.Close() }
