package provider

import (
	"maps"
	"testing"
)

// Plugin logs follow the level at which Terraform shows them, and a level
// the user set for the SDK or this provider is left alone.
func TestUnsetLogLevels(t *testing.T) {
	t.Parallel()
	all := func(level string) map[string]string {
		return map[string]string{"TF_LOG_SDK": level, "TF_LOG_SDK_PROTO": level, "TF_LOG_SDK_FRAMEWORK": level, "TF_LOG_PROVIDER_KHA": level}
	}
	cases := map[string]struct {
		env  map[string]string
		want map[string]string
	}{
		"nothing shown":          {nil, all("OFF")},
		"TF_LOG":                 {map[string]string{"TF_LOG": "debug"}, all("DEBUG")},
		"TF_LOG_PROVIDER wins":   {map[string]string{"TF_LOG": "trace", "TF_LOG_PROVIDER": "warn"}, all("WARN")},
		"JSON is trace":          {map[string]string{"TF_LOG": "json"}, all("TRACE")},
		"unknown level is trace": {map[string]string{"TF_LOG": "verbose"}, all("TRACE")},
		"core logs only":         {map[string]string{"TF_LOG_CORE": "trace"}, all("OFF")},
		"explicit SDK level kept": {map[string]string{"TF_LOG": "info", "TF_LOG_SDK_FRAMEWORK": "trace"},
			map[string]string{"TF_LOG_SDK": "INFO", "TF_LOG_SDK_PROTO": "INFO", "TF_LOG_PROVIDER_KHA": "INFO"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := unsetLogLevels(func(k string) string { return c.env[k] })
			if !maps.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
}
