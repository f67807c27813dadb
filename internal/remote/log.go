package remote

import "context"

// Level of a log message.
type Level int

const (
	LevelDebug Level = iota
	LevelInfo
	LevelWarn
)

// Logger receives a message for each step the engine takes on a host,
// with the host and path as fields. Fields never carry secrets or file
// content.
type Logger interface {
	Log(ctx context.Context, level Level, msg string, fields map[string]any)
}

type discard struct{}

func (discard) Log(context.Context, Level, string, map[string]any) {}

func (c *hostConn) log(ctx context.Context, level Level, msg string, fields map[string]any) {
	if fields == nil {
		fields = map[string]any{}
	}
	fields["host"] = c.cfg.Address()
	c.logger.Log(ctx, level, msg, fields)
}
