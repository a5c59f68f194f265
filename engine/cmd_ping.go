package engine

import "context"

func (e *Engine) cmdPing(context.Context, *request) ([]byte, error) { return okReply() }
