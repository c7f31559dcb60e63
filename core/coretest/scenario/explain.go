package scenario

import (
	"reflect"
	"strconv"
	"strings"

	"github.com/fairsched/fairsched/core/schedule"
)

// explain op=ID|pool=NAME [t=...]: the explanation (Scheduler.ExplainOperation
// with the preemptions of the operation's allocations in the log, or
// ExplainPool) at the current time: the state, then per finding, binding
// first, its code with its fields and, indented, its message.
func (c *Cluster) cmdExplain(a *args) (string, error) {
	op, isOp := a.str("op")
	pool, isPool := a.str("pool")
	c.at(a)
	if err := a.done(); err != nil {
		return "", err
	}
	if isOp == isPool {
		return "", errorf("cannot run explain without exactly one of op= and pool=")
	}
	var e schedule.Explanation
	var err error
	if isOp {
		var recent []schedule.Preemption
		for i := range c.events {
			ev := &c.events[i]
			if ev.Kind == EventPreempt && ev.Operation == op {
				recent = append(recent, schedule.Preemption{Time: coreTime(ev.T), Node: ev.Node, Decision: ev.Preempt})
			}
		}
		e, err = c.s.ExplainOperation(op, coreTime(c.now), recent)
	} else {
		e, err = c.s.ExplainPool(pool, coreTime(c.now))
	}
	if err != nil {
		return rejected(err), nil
	}
	return formatExplanation(&e), nil
}

// formatExplanation writes an explanation as the explain command prints it.
// Allocation IDs are written as events write them (node:sequence).
func formatExplanation(e *schedule.Explanation) string {
	var b strings.Builder
	name := e.Operation
	if name == "" {
		name = "pool " + e.Pool
	}
	b.WriteString(name + ": " + e.State + "\n")
	for i := range e.Findings {
		f := &e.Findings[i]
		b.WriteString("- " + f.Code)
		msg := f.Message
		if f.Allocation != nil {
			msg = strings.ReplaceAll(msg, "allocation "+strconv.FormatUint(*f.Allocation, 10), "allocation "+allocName(*f.Allocation))
		}
		if f.ForAllocation != nil {
			msg = strings.ReplaceAll(msg, "allocation "+strconv.FormatUint(*f.ForAllocation, 10), "allocation "+allocName(*f.ForAllocation))
		}
		v := reflect.ValueOf(f).Elem()
		tp := v.Type()
		for j := 0; j < tp.NumField(); j++ {
			key, _, _ := strings.Cut(tp.Field(j).Tag.Get("json"), ",")
			if key == "code" || key == "message" {
				continue
			}
			if s := fieldText(key, v.Field(j)); s != "" {
				b.WriteString(" " + key + "=" + s)
			}
		}
		b.WriteString("\n    " + msg + "\n")
	}
	return b.String()
}

// fieldText formats a finding's field, "" when it is absent.
func fieldText(key string, v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		return v.String()
	case reflect.Pointer:
		if v.IsNil() {
			return ""
		}
		e := v.Elem()
		switch e.Kind() {
		case reflect.Int64:
			return strconv.FormatInt(e.Int(), 10)
		case reflect.Uint64:
			if key == "allocation" || key == "for_allocation" {
				return allocName(e.Uint())
			}
			return strconv.FormatUint(e.Uint(), 10)
		case reflect.Float64:
			return fmtFloat(e.Float())
		}
	case reflect.Slice:
		if v.Len() == 0 {
			return ""
		}
		parts := make([]string, v.Len())
		for i := range parts {
			switch x := v.Index(i).Interface().(type) {
			case string:
				parts[i] = x
			case schedule.ResourceShares:
				parts[i] = x.Resource + ":" + fmtFloat(x.Usage) + "/" + fmtFloat(x.FairShare) + "/" + fmtFloat(x.Demand)
			case schedule.ProtectedRule:
				parts[i] = x.Rule + ":" + strconv.FormatInt(x.Count, 10)
				if x.Pool != "" {
					parts[i] += "@" + x.Pool
				}
			}
		}
		return strings.Join(parts, ",")
	}
	return ""
}
