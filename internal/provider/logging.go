package provider

import (
	"context"
	"os"
	"strings"

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

// unsetLogLevels returns, for each plugin log level the user left unset,
// the level at which Terraform shows this provider's lines: TF_LOG_PROVIDER,
// else TF_LOG, else nothing ("off"). The plugin SDK defaults to TRACE and
// sends every line to Terraform, which drops what it does not show; building
// those lines was most of the provider's CPU, and the framework's per-value
// trace lines made a 5,000-node plan grow quadratically.
func unsetLogLevels(getenv func(string) string) map[string]string {
	level := strings.ToUpper(getenv("TF_LOG_PROVIDER"))
	if level == "" {
		level = strings.ToUpper(getenv("TF_LOG"))
	}
	switch level {
	case "":
		level = "OFF"
	case "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF":
	default: // JSON and unknown names mean TRACE to Terraform
		level = "TRACE"
	}
	set := map[string]string{}
	for _, name := range []string{"TF_LOG_SDK", "TF_LOG_SDK_PROTO", "TF_LOG_SDK_FRAMEWORK", "TF_LOG_PROVIDER_KHA"} {
		if getenv(name) == "" {
			set[name] = level
		}
	}
	return set
}

// AlignLogLevels sets the log levels of unsetLogLevels in this process's
// environment; call it before serving, which reads them.
func AlignLogLevels() error {
	for name, level := range unsetLogLevels(os.Getenv) {
		if err := os.Setenv(name, level); err != nil {
			return err
		}
	}
	return nil
}
