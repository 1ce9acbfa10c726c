package admin

import (
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/hibiken/asynq"

	"github.com/agentfix/agentfix/internal/logattr"
)

// historyDays is how many days, today included, the queues page counts
// processed and failed tasks for.
const historyDays = 7

// queuesView is the data of the queues page: how each queue stands, its
// last days, and the workers serving the queues.
type queuesView struct {
	Queues  []queueStats
	History historyView
	Workers []workerRow
	// WorkersError says why the workers could not be read.
	WorkersError string
	// Reload is set while a task is active: the page reloads after that
	// many seconds.
	Reload int
}

// queueStats is one queue's row: its tasks by state, how long its oldest
// pending task has waited, and what it processed.
type queueStats struct {
	Name string
	// TasksURL is the queue's tasks on the tasks page.
	TasksURL string
	// Missing is set for a queue of the bot's that no task was ever
	// enqueued on.
	Missing                                                bool
	Paused                                                 bool
	Active, Pending, Scheduled, Retry, Archived, Completed int
	// Waited is how long the oldest pending task has waited.
	Waited                      time.Duration
	ProcessedToday, FailedToday int
	ProcessedTotal, FailedTotal int
	// Error says why the queue could not be read.
	Error string
}

// historyView is the processed and failed counts of the last days, a row
// per day (today first) and a cell per queue in the order of Queues.
type historyView struct {
	// Span is how many days it covers, today included.
	Span   int
	Queues []string
	Days   []dayRow
	// Error says why the history could not be read.
	Error string
}

// dayRow is one day of the history.
type dayRow struct {
	// Label is "today", "yesterday" or "N days ago".
	Label string
	Cells []dayCell
}

// dayCell is what one queue processed on one day; Failed is part of
// Processed.
type dayCell struct{ Processed, Failed int }

// workerRow is one worker process (an asynq server).
type workerRow struct {
	Host        string
	PID         int
	Status      string
	Started     time.Time
	Concurrency int
	// Queues are its queues with their priorities, as "agent 1".
	Queues []string
	// Active are the tasks it runs now, as "type id".
	Active []string
}

// queueList serves the queues page. It only reads: no task can be
// deleted, run, archived or cancelled from it, and no queue paused.
func (s *Server) queueList(w http.ResponseWriter, r *http.Request) {
	v := s.readQueues(r)
	s.renderPage(w, r, http.StatusOK, "queues", page{Title: "Queues", Nav: "queues", Refresh: v.Reload, Data: v})
}

// readQueues reads what the queues page shows; what cannot be read is
// logged and said on the page.
func (s *Server) readQueues(r *http.Request) queuesView {
	insp := asynq.NewInspectorFromRedisClient(s.rdb)
	var v queuesView
	found, err := insp.Queues()
	if err != nil {
		s.log.Error("list queues", logattr.Path, r.URL.Path, logattr.Err, err)
	}
	for _, q := range queueOrder(s.queues, found) {
		row := queueStats{Name: q, TasksURL: "/admin/tasks#queue-" + q}
		switch {
		case err != nil:
			row.Error = "The queues could not be read from Redis; try again shortly."
		case !slices.Contains(found, q):
			row.Missing = true
		default:
			row = s.readQueue(r, insp, row)
		}
		v.Queues = append(v.Queues, row)
	}
	v.History = s.readHistory(r, insp, v.Queues)
	servers, err := insp.Servers()
	if err != nil {
		s.log.Error("list workers", logattr.Path, r.URL.Path, logattr.Err, err)
		v.WorkersError = "The workers could not be read from Redis; try again shortly."
	}
	v.Workers = workerRows(servers)
	if slices.ContainsFunc(v.Queues, func(q queueStats) bool { return q.Active > 0 }) {
		v.Reload = listRefresh
	}
	return v
}

// readQueue fills in row, of a queue that exists.
func (s *Server) readQueue(r *http.Request, insp *asynq.Inspector, row queueStats) queueStats {
	info, err := insp.GetQueueInfo(row.Name)
	if err != nil {
		s.log.Error("read queue", logattr.Path, r.URL.Path, "queue", row.Name, logattr.Err, err)
		row.Error = "This queue could not be read from Redis; try again shortly."
		return row
	}
	row.Paused = info.Paused
	row.Active, row.Pending, row.Scheduled = info.Active, info.Pending, info.Scheduled
	row.Retry, row.Archived, row.Completed = info.Retry, info.Archived, info.Completed
	row.Waited = info.Latency
	row.ProcessedToday, row.FailedToday = info.Processed, info.Failed
	row.ProcessedTotal, row.FailedTotal = info.ProcessedTotal, info.FailedTotal
	return row
}

// readHistory reads the last historyDays days of every queue that exists.
func (s *Server) readHistory(r *http.Request, insp *asynq.Inspector, queues []queueStats) historyView {
	byQueue := map[string][]*asynq.DailyStats{}
	var names []string
	for _, q := range queues {
		if q.Missing || q.Error != "" {
			continue
		}
		stats, err := insp.History(q.Name, historyDays)
		if err != nil {
			s.log.Error("read queue history", logattr.Path, r.URL.Path, "queue", q.Name, logattr.Err, err)
			return historyView{Span: historyDays, Error: "The history of the queues could not be read from Redis; try again shortly."}
		}
		names = append(names, q.Name)
		byQueue[q.Name] = stats
	}
	return history(names, byQueue, historyDays)
}

// queueOrder is the order of the queues page: the bot's own queues first,
// as configured, then any other queue found in Redis (another asynq
// program sharing it), by name.
func queueOrder(own, found []string) []string {
	order := slices.Clone(own)
	var others []string
	for _, q := range found {
		if !slices.Contains(own, q) {
			others = append(others, q)
		}
	}
	sort.Strings(others)
	return append(order, others...)
}

// history arranges the daily stats of each queue (asynq's History, today
// first) into days rows of one cell per queue; a day a queue has no stats
// for counts zero.
func history(queues []string, byQueue map[string][]*asynq.DailyStats, days int) historyView {
	v := historyView{Span: days, Queues: queues}
	if len(queues) == 0 {
		return v
	}
	for i := range days {
		row := dayRow{Label: dayLabel(i), Cells: make([]dayCell, len(queues))}
		for j, q := range queues {
			if stats := byQueue[q]; i < len(stats) && stats[i] != nil {
				row.Cells[j] = dayCell{Processed: stats[i].Processed, Failed: stats[i].Failed}
			}
		}
		v.Days = append(v.Days, row)
	}
	return v
}

// dayLabel names the day i days before today.
func dayLabel(i int) string {
	switch i {
	case 0:
		return "today"
	case 1:
		return "yesterday"
	}
	return strconv.Itoa(i) + " days ago"
}

// workerRows describes the workers, oldest first (then by host and pid):
// their queues by priority, highest first, and their active tasks by id.
func workerRows(servers []*asynq.ServerInfo) []workerRow {
	rows := make([]workerRow, 0, len(servers))
	for _, sv := range servers {
		row := workerRow{Host: sv.Host, PID: sv.PID, Status: sv.Status, Started: sv.Started, Concurrency: sv.Concurrency}
		qs := make([]string, 0, len(sv.Queues))
		for q := range sv.Queues {
			qs = append(qs, q)
		}
		sort.Slice(qs, func(a, b int) bool {
			if pa, pb := sv.Queues[qs[a]], sv.Queues[qs[b]]; pa != pb {
				return pa > pb
			}
			return qs[a] < qs[b]
		})
		for _, q := range qs {
			row.Queues = append(row.Queues, q+" "+strconv.Itoa(sv.Queues[q]))
		}
		for _, w := range sv.ActiveWorkers {
			row.Active = append(row.Active, w.TaskType+" "+w.TaskID)
		}
		sort.Strings(row.Active)
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(a, b int) bool {
		ra, rb := rows[a], rows[b]
		if !ra.Started.Equal(rb.Started) {
			return ra.Started.Before(rb.Started)
		}
		if ra.Host != rb.Host {
			return ra.Host < rb.Host
		}
		return ra.PID < rb.PID
	})
	return rows
}

// waited describes how long a queue's oldest pending task has waited: to
// the minute, and "under a minute" below one (the queue's latency is
// measured as the page is read).
func waited(d time.Duration) string {
	switch {
	case d <= 0:
		return "–"
	case d < time.Minute:
		return "under a minute"
	}
	return dur(d.Truncate(time.Minute))
}

// joinComma joins a list for reading; an empty one is a dash.
func joinComma(s []string) string {
	if len(s) == 0 {
		return "–"
	}
	return strings.Join(s, ", ")
}
