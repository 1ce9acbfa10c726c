package admin

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/internal/logattr"
	"github.com/agentfix/agentfix/runs"
)

// tasksPerState is how many tasks of each state of a queue the tasks page
// shows.
const tasksPerState = 50

// taskStates are the task states the tasks page lists, in its order.
var taskStates = []asynq.TaskState{
	asynq.TaskStateActive, asynq.TaskStatePending, asynq.TaskStateScheduled,
	asynq.TaskStateRetry, asynq.TaskStateArchived, asynq.TaskStateCompleted,
}

// tasksView is the data of the tasks page.
type tasksView struct {
	Queues   []queueView
	PerState int
	// Delivery narrows the page to the tasks of one delivery.
	Delivery string
	// RunsError says why the runs could not be read: tasks are shown
	// without their runs.
	RunsError string
	// Reload is set while a listed task is active: the page reloads after
	// that many seconds.
	Reload int
}

// active reports whether a task listed is running: the page reloads.
func (v tasksView) active() bool {
	for _, q := range v.Queues {
		for _, t := range q.Tasks {
			if t.State == asynq.TaskStateActive.String() {
				return true
			}
		}
	}
	return false
}

// queueView is one queue on the tasks page.
type queueView struct {
	Name string
	// StatsURL is the queue's row on the queues page.
	StatsURL string
	Tasks    []taskRow
	// Left says how many tasks of which states are not shown (beyond
	// PerState).
	Left []string
	// Error says why the queue could not be read.
	Error string
}

// taskRow is one task: what it is for, how it stands and its runs.
type taskRow struct {
	ID, Type   string
	State      string
	DeliveryID string
	// Target is "owner/repo #N" from the payload.
	Target string
	// Retried and MaxRetry count its attempts; LastErr is its last error.
	Retried, MaxRetry int
	LastErr           string
	// When is the time that matters in its state (next attempt, last
	// failure, completion) and WhenLabel what it is.
	When      time.Time
	WhenLabel string
	Run       *taskRun
}

// taskRun links a task to the run its delivery started: the run's page
// when there is one, the runs list filtered to the delivery when a retry
// started another.
type taskRun struct {
	URL    string
	Count  int
	Status statusView
}

// taskPayload is the part of a task's payload (package jobs) the page
// reads: every payload names its delivery; agent and notice payloads name
// the repository and the issue or pull request.
type taskPayload struct {
	DeliveryID string `json:"delivery_id"`
	Repo       struct {
		FullName string `json:"full_name"`
	} `json:"repo"`
	Number int `json:"number"`
}

func (s *Server) taskList(w http.ResponseWriter, r *http.Request) {
	v := tasksView{PerState: tasksPerState, Delivery: r.URL.Query().Get("delivery")}
	byDelivery := map[string][]runs.Meta{}
	metas, err := s.runs.List(r.Context(), scanLimit)
	if err != nil {
		s.log.Error("list runs", logattr.Path, r.URL.Path, logattr.Err, err)
		v.RunsError = "The run records could not be read from Redis, so the tasks are shown without their runs."
	}
	for _, m := range metas {
		if m.DeliveryID != "" {
			byDelivery[m.DeliveryID] = append(byDelivery[m.DeliveryID], m)
		}
	}
	insp := asynq.NewInspectorFromRedisClient(s.rdb)
	found, qerr := insp.Queues()
	for _, q := range s.queues {
		qv, err := queueView{Name: q, StatsURL: "/admin/queues#queue-" + q}, qerr
		if err == nil {
			qv, err = listQueue(insp, q, slices.Contains(found, q), v.Delivery, byDelivery)
		}
		if err != nil {
			s.log.Error("list tasks", logattr.Path, r.URL.Path, logattr.Err, err)
			qv.Error = "The tasks of this queue could not be read from Redis; try again shortly."
		}
		v.Queues = append(v.Queues, qv)
	}
	if v.active() {
		v.Reload = listRefresh
	}
	s.renderPage(w, r, http.StatusOK, "tasks", page{Title: "Tasks", Nav: "tasks", Refresh: v.Reload, Data: v})
}

// listQueue reads the tasks of queue q (exists: it is in Redis's list of
// queues), those of delivery when it is not empty, and links them to the
// runs of their deliveries.
func listQueue(insp *asynq.Inspector, q string, exists bool, delivery string, byDelivery map[string][]runs.Meta) (queueView, error) {
	v := queueView{Name: q, StatsURL: "/admin/queues#queue-" + q}
	if !exists {
		return v, nil // no task was ever enqueued on it
	}
	info, err := insp.GetQueueInfo(q)
	if err != nil {
		return v, err
	}
	for _, st := range taskStates {
		n := stateCount(info, st)
		if n == 0 {
			continue
		}
		tasks, err := listTasks(insp, q, st)
		if err != nil {
			return v, err
		}
		if n > len(tasks) {
			v.Left = append(v.Left, strconv.Itoa(n-len(tasks))+" more "+st.String())
		}
		for _, t := range tasks {
			row := describeTask(t, byDelivery)
			if delivery != "" && row.DeliveryID != delivery {
				continue
			}
			v.Tasks = append(v.Tasks, row)
		}
	}
	return v, nil
}

func stateCount(info *asynq.QueueInfo, st asynq.TaskState) int {
	switch st {
	case asynq.TaskStateActive:
		return info.Active
	case asynq.TaskStatePending:
		return info.Pending
	case asynq.TaskStateScheduled:
		return info.Scheduled
	case asynq.TaskStateRetry:
		return info.Retry
	case asynq.TaskStateArchived:
		return info.Archived
	case asynq.TaskStateCompleted:
		return info.Completed
	}
	return 0
}

func listTasks(insp *asynq.Inspector, q string, st asynq.TaskState) ([]*asynq.TaskInfo, error) {
	size := asynq.PageSize(tasksPerState)
	var tasks []*asynq.TaskInfo
	var err error
	switch st {
	case asynq.TaskStateActive:
		tasks, err = insp.ListActiveTasks(q, size)
	case asynq.TaskStatePending:
		tasks, err = insp.ListPendingTasks(q, size)
	case asynq.TaskStateScheduled:
		tasks, err = insp.ListScheduledTasks(q, size)
	case asynq.TaskStateRetry:
		tasks, err = insp.ListRetryTasks(q, size)
	case asynq.TaskStateArchived:
		tasks, err = insp.ListArchivedTasks(q, size)
	case asynq.TaskStateCompleted:
		tasks, err = insp.ListCompletedTasks(q, size)
	}
	if errors.Is(err, asynq.ErrQueueNotFound) {
		return nil, nil // emptied since the queue's counts were read
	}
	return tasks, err
}

// describeTask returns the row of task t, linked to the runs of its
// delivery (newest first in byDelivery).
func describeTask(t *asynq.TaskInfo, byDelivery map[string][]runs.Meta) taskRow {
	row := taskRow{ID: t.ID, Type: t.Type, State: t.State.String(), Retried: t.Retried, MaxRetry: t.MaxRetry, LastErr: t.LastErr}
	var p taskPayload
	if json.Unmarshal(t.Payload, &p) == nil {
		row.DeliveryID = p.DeliveryID
		if p.Repo.FullName != "" {
			row.Target = p.Repo.FullName
			if p.Number > 0 {
				row.Target += " #" + itoa(p.Number)
			}
		}
	}
	switch t.State {
	case asynq.TaskStateScheduled, asynq.TaskStateRetry:
		row.When, row.WhenLabel = t.NextProcessAt, "runs at"
	case asynq.TaskStateArchived:
		row.When, row.WhenLabel = t.LastFailedAt, "failed at"
	case asynq.TaskStateCompleted:
		row.When, row.WhenLabel = t.CompletedAt, "completed at"
	}
	if ms := byDelivery[row.DeliveryID]; row.DeliveryID != "" && len(ms) > 0 {
		row.Run = &taskRun{URL: "/admin/runs/" + ms[0].RunID, Count: len(ms), Status: describeStatus(ms[0].Status)}
		if len(ms) > 1 {
			row.Run.URL = runsURL(runFilter{Delivery: row.DeliveryID})
		}
	}
	return row
}
