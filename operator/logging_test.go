package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

func TestJSONLoggerWritesKeyValuesAndHonoursLevel(t *testing.T) {
	tests := []struct {
		level       configv1alpha1.LogLevel
		wantMessage []string
	}{
		{configv1alpha1.LogLevelDebug, []string{"verbose", "normal", "failure"}},
		{configv1alpha1.LogLevelInfo, []string{"normal", "failure"}},
		{configv1alpha1.LogLevelError, []string{"failure"}},
	}
	for _, tc := range tests {
		t.Run(string(tc.level), func(t *testing.T) {
			var out bytes.Buffer
			log := newLogger(configv1alpha1.LoggingConfiguration{Level: tc.level, Format: configv1alpha1.LogFormatJSON}, &out)
			log.V(1).Info("verbose")
			log.WithName("setup").Info("normal", "backend", "none")
			log.Error(errors.New("boom"), "failure")

			var got []string
			for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				var entry map[string]any
				if err := json.Unmarshal([]byte(line), &entry); err != nil {
					t.Fatalf("log line is not JSON: %q: %v", line, err)
				}
				got = append(got, entry["msg"].(string))
				switch entry["msg"] {
				case "normal":
					if entry["backend"] != "none" || entry["logger"] != "setup" || entry["level"] != "info" {
						t.Errorf("key/values missing from %q", line)
					}
				case "failure":
					if entry["error"] != "boom" {
						t.Errorf("error missing from %q", line)
					}
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.wantMessage, ",") {
				t.Errorf("logged %q, want %q", got, tc.wantMessage)
			}
		})
	}
}

func TestTextLoggerIsNotJSON(t *testing.T) {
	var out bytes.Buffer
	newLogger(configv1alpha1.LoggingConfiguration{Level: configv1alpha1.LogLevelInfo, Format: configv1alpha1.LogFormatText}, &out).
		Info("hello", "key", "value")
	line := out.String()
	if strings.HasPrefix(line, "{") || !strings.Contains(line, "hello") || !strings.Contains(line, `"key": "value"`) {
		t.Errorf("unexpected text log line %q", line)
	}
}

func TestLoggableConfigurationKeepsTheContent(t *testing.T) {
	var out bytes.Buffer
	newLogger(configv1alpha1.LoggingConfiguration{Level: configv1alpha1.LogLevelInfo, Format: configv1alpha1.LogFormatJSON}, &out).
		Info("starting", "configuration", loggableConfiguration(configv1alpha1.NewDefaultOperatorConfiguration()))
	if !strings.Contains(out.String(), `"leaderElection":{"enabled":true,"resourceName":"copse-operator-leader"`) {
		t.Errorf("configuration not logged in full: %s", out.String())
	}
}
