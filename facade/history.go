package facade

import (
	"strconv"

	"github.com/fairsched/fairsched/internal/jsonpath"
	"github.com/fairsched/fairsched/server"
	"github.com/fairsched/fairsched/wire"
)

// appendOperationHistory appends the members "tasks":[…],"recent_preemptions":[…]
// of an operation's orchid (docs/api.md#the-orchid): its tasks as it was
// started, and its recent preemptions, the most recent first, each
// {"time_s","allocation_id","node_id","reason"} with the reason sentence
// its node was sent.
func (s *Server) appendOperationHistory(dst []byte, id string) []byte {
	tasks := s.core.OperationTasks(id)
	dst = append(dst, `"tasks":`...)
	dst = wire.AppendTasks(dst, tasks)
	var buf [server.PreemptionsPerOperation]server.PreemptionEvent
	events := s.core.RecentPreemptions(buf[:0], id)
	dst = append(dst, `,"recent_preemptions":[`...)
	for i := range events {
		e := &events[i]
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"time_s":`...)
		dst = strconv.AppendFloat(dst, e.Time.Seconds(), 'g', -1, 64)
		dst = append(dst, `,"allocation_id":"`...)
		dst = strconv.AppendUint(dst, e.Decision.Allocation, 10)
		dst = append(dst, `","node_id":`...)
		dst = jsonpath.AppendString(dst, e.Node)
		dst = append(dst, `,"reason":"`...)
		dst = wire.AppendPreemptReason(dst, &e.Decision)
		dst = append(dst, `"}`...)
	}
	return append(dst, ']')
}
