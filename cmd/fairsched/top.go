package main

import (
	"bytes"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/fairsched/fairsched/client"
)

func init() {
	cliCommands = append(cliCommands, cliCommand{group: "top", args: "[--interval D] [--once] [--iterations N] [--history D]",
		summary: "a refreshing view of the pool tree: fair share, usage, demand, satisfaction, starvation, operations, and sparklines of usage and fair share over --history",
		flags:   topFlags})
}

func topFlags(fs *flag.FlagSet) func(*cliEnv, []string) error {
	interval := fs.Duration("interval", 2*time.Second, "time between refreshes")
	once := fs.Bool("once", false, "print one view and exit (no screen control)")
	iterations := fs.Int("iterations", 0, "exit after N views (0: until interrupted)")
	window := fs.Duration("history", 10*time.Minute, "the sparklines' window (0: none)")
	return func(e *cliEnv, args []string) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		if *interval <= 0 {
			return usagef("--interval %v: want a positive duration", *interval)
		}
		if *window < 0 || *window > 24*time.Hour {
			return usagef("--history %v: want 0 (no sparklines) to 24h", *window)
		}
		if *once {
			*iterations = 1
		}
		tick := time.NewTicker(*interval)
		defer tick.Stop()
		for n := 1; ; n++ {
			pools, err := e.c.PoolOrchids(e.ctx)
			var hist map[string][]client.HistoryPoint
			if err == nil && *window > 0 {
				hist, err = topHistory(e, pools, *window)
			}
			if *once {
				if err != nil {
					return err
				}
				if e.output == "json" {
					return e.emit(pools, nil)
				}
				_, err = e.stdout.Write(renderTop(e.c.BaseURL(), time.Now(), pools, hist, *window, nil))
				return err
			}
			if e.ctx.Err() != nil {
				return nil
			}
			// Home, clear, then the frame: the view refreshes in place.
			frame := append([]byte("\x1b[H\x1b[2J"), renderTop(e.c.BaseURL(), time.Now(), pools, hist, *window, err)...)
			if _, werr := e.stdout.Write(frame); werr != nil {
				return werr
			}
			if *iterations > 0 && n >= *iterations {
				return nil
			}
			select {
			case <-e.ctx.Done():
				return nil
			case <-tick.C:
			}
		}
	}
}

// Sparklines: topSparkWidth points a pool, for the first topSparkPools
// pools (one request each a refresh).
const (
	topSparkWidth = 30
	topSparkPools = 64
)

// topHistory fetches the history of the pools but the root (the first
// topSparkPools) over the window, topSparkWidth points each.
func topHistory(e *cliEnv, pools []client.PoolOrchid, window time.Duration) (map[string][]client.HistoryPoint, error) {
	hist := map[string][]client.HistoryPoint{}
	step := window.Seconds() / topSparkWidth
	for _, p := range pools {
		if p.Parent == "" {
			continue
		}
		if len(hist) == topSparkPools {
			break
		}
		h, err := e.c.PoolHistory(e.ctx, p.Name, -window.Seconds(), step)
		if err != nil {
			if client.IsNotFound(err) {
				continue // removed since the listing
			}
			return nil, err
		}
		hist[p.Name] = h.Points
	}
	return hist, nil
}

// sparkBars are the sparklines' eight levels.
var sparkBars = []rune("▁▂▃▄▅▆▇█")

// sparklines draws a pool's usage and fair share over its points as two
// lines of one scale (the largest value of either): a step without an
// update is a space. The last width points are drawn.
func sparklines(pts []client.HistoryPoint, width int) (usage, fair string) {
	if len(pts) > width {
		pts = pts[len(pts)-width:]
	}
	top := 0.0
	for _, p := range pts {
		top = max(top, p.Usage, p.FairShare)
	}
	draw := func(v func(client.HistoryPoint) float64) string {
		var b strings.Builder
		for _, p := range pts {
			if p.Samples == 0 {
				b.WriteByte(' ')
				continue
			}
			i := 0
			if top > 0 {
				i = min(int(v(p)/top*float64(len(sparkBars)-1)+0.5), len(sparkBars)-1)
			}
			b.WriteRune(sparkBars[i])
		}
		return b.String()
	}
	return draw(func(p client.HistoryPoint) float64 { return p.Usage }), draw(func(p client.HistoryPoint) float64 { return p.FairShare })
}

// renderTop draws the pool tree: each pool under its parent, children by
// name, with its shares of its dominant resource (the RESOURCE column) and,
// with hist, sparklines of its dominant usage and fair share over window.
func renderTop(server string, now time.Time, pools []client.PoolOrchid, hist map[string][]client.HistoryPoint,
	window time.Duration, fetchErr error) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "fairsched top — %s — %s\n", server, now.Format("15:04:05"))
	if fetchErr != nil {
		fmt.Fprintf(&b, "\n%v\n", fetchErr)
		return b.Bytes()
	}
	var running, pending, starving int64
	children := map[string][]int{}
	root := -1
	for i, p := range pools {
		if p.Parent == "" {
			root = i
		} else {
			children[p.Parent] = append(children[p.Parent], i)
		}
		if p.StarvationStatus != "non_starving" && p.StarvationStatus != "" {
			starving++
		}
	}
	if root >= 0 {
		running, pending = pools[root].RunningOperationCount, pools[root].PendingOperationCount
	}
	fmt.Fprintf(&b, "%d pools, %d running operations, %d pending, %d pools starving\n\n",
		len(pools), running, pending, starving)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	head := "POOL\tWEIGHT\tRESOURCE\tFAIR SHARE\tUSAGE\tDEMAND\tSATISFACTION\tSTATUS\tSTARVATION\tRUNNING\tPENDING"
	if hist != nil {
		w := strings.TrimSuffix(window.String(), "0s")
		if strings.HasSuffix(w, "h0m") {
			w = strings.TrimSuffix(w, "0m")
		}
		head += "\tUSAGE " + w + "\tFAIR SHARE " + w
	}
	fmt.Fprintln(tw, head)
	var walk func(i, depth int)
	walk = func(i, depth int) {
		p := &pools[i]
		r := p.DominantResource
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d",
			strings.Repeat("  ", depth)+p.Name, strconv.FormatFloat(p.Weight, 'g', 4, 64), r,
			percent(p.FairShare, r), percent(p.UsageShare, r), percent(p.DemandShare, r),
			ratio(p.SatisfactionRatio), p.Status, p.StarvationStatus,
			p.RunningOperationCount, p.PendingOperationCount)
		if hist != nil {
			u, f := sparklines(hist[p.Name], topSparkWidth)
			fmt.Fprintf(tw, "\t%s\t%s", u, f)
		}
		fmt.Fprintln(tw)
		kids := children[p.Name]
		slices.SortFunc(kids, func(a, b int) int { return strings.Compare(pools[a].Name, pools[b].Name) })
		for _, k := range kids {
			walk(k, depth+1)
		}
	}
	if root >= 0 {
		walk(root, 0)
	}
	tw.Flush()
	return b.Bytes()
}

// percent writes resource r's share as a percentage.
func percent(s client.Share, r string) string {
	v := map[string]float64{"cpu": s.CPU, "memory": s.Memory, "gpu": s.GPU, "user_slots": s.UserSlots,
		"network": s.Network}[r]
	return strconv.FormatFloat(100*v, 'f', 1, 64) + "%"
}
