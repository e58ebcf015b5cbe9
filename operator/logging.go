package main

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/go-logr/logr"
	"go.uber.org/zap/zapcore"
	ctrlzap "sigs.k8s.io/controller-runtime/pkg/log/zap"

	configv1alpha1 "github.com/copse-dev/copse/api/config/v1alpha1"
)

// newLogger builds the operator's structured logger. logr's V(1) is zap's
// debug level, so "debug" also shows the verbose messages of controller-runtime.
func newLogger(cfg configv1alpha1.LoggingConfiguration, out io.Writer) logr.Logger {
	// Readable timestamps instead of zap's default epoch seconds. They must be
	// set on the encoder itself: ctrlzap ignores its TimeEncoder option once an
	// encoder is given.
	readableTime := func(ec *zapcore.EncoderConfig) { ec.EncodeTime = zapcore.RFC3339NanoTimeEncoder }
	encoder := ctrlzap.JSONEncoder(readableTime)
	if cfg.Format == configv1alpha1.LogFormatText {
		encoder = ctrlzap.ConsoleEncoder(readableTime)
	}
	return ctrlzap.New(
		ctrlzap.WriteTo(out),
		encoder,
		ctrlzap.Level(zapLevel(cfg.Level)),
		// Stack traces on every error would drown the log; keep them for panics.
		ctrlzap.StacktraceLevel(zapcore.PanicLevel),
	)
}

// loggableConfiguration renders cfg as a JSON object in log lines.
// controller-runtime's encoder would otherwise log any runtime.Object as a
// Kubernetes object reference and drop the content.
func loggableConfiguration(cfg *configv1alpha1.OperatorConfiguration) any {
	data, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Sprintf("unprintable configuration: %v", err)
	}
	return json.RawMessage(data)
}

func zapLevel(level configv1alpha1.LogLevel) zapcore.Level {
	switch level {
	case configv1alpha1.LogLevelDebug:
		return zapcore.DebugLevel
	case configv1alpha1.LogLevelError:
		return zapcore.ErrorLevel
	default:
		return zapcore.InfoLevel
	}
}
