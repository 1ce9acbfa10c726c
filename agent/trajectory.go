package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// Record types of the trajectory JSONL: every line is one JSON object whose
// "type" is one of these, followed by the fields of Header, Step or Result.
const (
	RecordHeader = "header"
	RecordStep   = "step"
	RecordResult = "result"
)

// trajectoryWriter appends records to a trajectory, one line per record in
// one Write call, and flushes a writer that buffers (Flush() error) after
// each, so a crash loses at most the record being written. It does not
// fsync: the OS has every finished record, which survives the process.
type trajectoryWriter struct {
	w   io.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

func newTrajectoryWriter(w io.Writer) *trajectoryWriter {
	t := &trajectoryWriter{w: w}
	t.enc = json.NewEncoder(&t.buf)
	t.enc.SetEscapeHTML(false)
	return t
}

// The line shapes: "type" first, then the record's own fields.
type (
	headerLine struct {
		Type string `json:"type"`
		*Header
	}
	stepLine struct {
		Type string `json:"type"`
		*Step
	}
	resultLine struct {
		Type string `json:"type"`
		*Result
	}
)

func (t *trajectoryWriter) header(h *Header) error { return t.write(headerLine{RecordHeader, h}) }
func (t *trajectoryWriter) step(s *Step) error     { return t.write(stepLine{RecordStep, s}) }
func (t *trajectoryWriter) result(r *Result) error { return t.write(resultLine{RecordResult, r}) }

func (t *trajectoryWriter) write(line any) error {
	if t == nil {
		return nil
	}
	t.buf.Reset()
	if err := t.enc.Encode(line); err != nil {
		return fmt.Errorf("encode trajectory record: %w", err)
	}
	if _, err := t.w.Write(t.buf.Bytes()); err != nil {
		return fmt.Errorf("write trajectory record: %w", err)
	}
	if f, ok := t.w.(interface{ Flush() error }); ok {
		if err := f.Flush(); err != nil {
			return fmt.Errorf("flush trajectory: %w", err)
		}
	}
	return nil
}
