package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Trajectory is a trajectory file read back: its header, its steps and, if
// the run finished, its result.
type Trajectory struct {
	Header Header
	Steps  []Step
	// Result is nil when the run did not finish (it crashed or is still
	// running).
	Result *Result
	// Truncated reports that the last line was cut off mid-write (a
	// crash) and was skipped.
	Truncated bool
}

// Messages returns the whole history: the header's messages, then every
// step's.
func (t *Trajectory) Messages() []Message {
	msgs := append([]Message(nil), t.Header.Messages...)
	for _, s := range t.Steps {
		msgs = append(msgs, s.Messages...)
	}
	return msgs
}

// ReadTrajectory reads a trajectory written by Agent.Run. A last line
// without its newline that does not parse is a record cut off by a crash:
// it is skipped and Truncated is set. Any other malformed line, a missing
// or repeated header, a record after the result, or an unknown version or
// record type is an error naming the line.
func ReadTrajectory(r io.Reader) (Trajectory, error) {
	var t Trajectory
	br := bufio.NewReader(r)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return Trajectory{}, fmt.Errorf("read trajectory line %d: %w", n, err)
		}
		last := err != nil
		if len(bytes.TrimSpace(line)) > 0 {
			if perr := t.add(n, line); perr != nil {
				var syntax *json.SyntaxError
				if last && line[len(line)-1] != '\n' && (errors.As(perr, &syntax) || errors.Is(perr, io.ErrUnexpectedEOF)) {
					t.Truncated = true
				} else {
					return Trajectory{}, perr
				}
			}
		}
		if last {
			break
		}
	}
	if t.Header.V == 0 {
		return Trajectory{}, errors.New("read trajectory: no header record")
	}
	return t, nil
}

// add parses one line into t.
func (t *Trajectory) add(n int, line []byte) error {
	var kind struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(line, &kind); err != nil {
		return fmt.Errorf("trajectory line %d: %w", n, err)
	}
	if t.Result != nil {
		return fmt.Errorf("trajectory line %d: %s record after the result", n, kind.Type)
	}
	if (kind.Type == RecordHeader) != (n == 1) {
		return fmt.Errorf("trajectory line %d: %s record; the header must be the first line and only there", n, kind.Type)
	}
	var err error
	switch kind.Type {
	case RecordHeader:
		if err = json.Unmarshal(line, &t.Header); err == nil && t.Header.V != TrajectoryVersion {
			return fmt.Errorf("trajectory line %d: version %d, this program reads version %d", n, t.Header.V, TrajectoryVersion)
		}
	case RecordStep:
		var s Step
		if err = json.Unmarshal(line, &s); err == nil {
			t.Steps = append(t.Steps, s)
		}
	case RecordResult:
		var res Result
		if err = json.Unmarshal(line, &res); err == nil {
			t.Result = &res
		}
	default:
		return fmt.Errorf("trajectory line %d: unknown record type %q", n, kind.Type)
	}
	if err != nil {
		return fmt.Errorf("trajectory line %d: %w", n, err)
	}
	return nil
}
