package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// tflogLogger bridges the SSH engine's steps into Terraform's logs
// (TF_LOG=debug shows each step with its host and path).
type tflogLogger struct{}

func (tflogLogger) Log(ctx context.Context, level remote.Level, msg string, fields map[string]any) {
	switch level {
	case remote.LevelDebug:
		tflog.Debug(ctx, msg, fields)
	case remote.LevelInfo:
		tflog.Info(ctx, msg, fields)
	default:
		tflog.Warn(ctx, msg, fields)
	}
}
