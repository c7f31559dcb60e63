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
	cliCommands = append(cliCommands, cliCommand{group: "top", args: "[--interval D] [--once] [--iterations N]",
		summary: "a refreshing view of the pool tree: fair share, usage, demand, satisfaction, starvation, operations",
		flags:   topFlags})
}

func topFlags(fs *flag.FlagSet) func(*cliEnv, []string) error {
	interval := fs.Duration("interval", 2*time.Second, "time between refreshes")
	once := fs.Bool("once", false, "print one view and exit (no screen control)")
	iterations := fs.Int("iterations", 0, "exit after N views (0: until interrupted)")
	return func(e *cliEnv, args []string) error {
		if err := wantArgs(args, 0, "no arguments"); err != nil {
			return err
		}
		if *interval <= 0 {
			return usagef("--interval %v: want a positive duration", *interval)
		}
		if *once {
			*iterations = 1
		}
		tick := time.NewTicker(*interval)
		defer tick.Stop()
		for n := 1; ; n++ {
			pools, err := e.c.PoolOrchids(e.ctx)
			if *once {
				if err != nil {
					return err
				}
				if e.output == "json" {
					return e.emit(pools, nil)
				}
				_, err = e.stdout.Write(renderTop(e.c.BaseURL(), time.Now(), pools, nil))
				return err
			}
			if e.ctx.Err() != nil {
				return nil
			}
			// Home, clear, then the frame: the view refreshes in place.
			frame := append([]byte("\x1b[H\x1b[2J"), renderTop(e.c.BaseURL(), time.Now(), pools, err)...)
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

// renderTop draws the pool tree: each pool under its parent, children by
// name, with its shares of its dominant resource (the RESOURCE column).
func renderTop(server string, now time.Time, pools []client.PoolOrchid, fetchErr error) []byte {
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
	fmt.Fprintln(tw, "POOL\tWEIGHT\tRESOURCE\tFAIR SHARE\tUSAGE\tDEMAND\tSATISFACTION\tSTATUS\tSTARVATION\tRUNNING\tPENDING")
	var walk func(i, depth int)
	walk = func(i, depth int) {
		p := &pools[i]
		r := p.DominantResource
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\n",
			strings.Repeat("  ", depth)+p.Name, strconv.FormatFloat(p.Weight, 'g', 4, 64), r,
			percent(p.FairShare, r), percent(p.UsageShare, r), percent(p.DemandShare, r),
			ratio(p.SatisfactionRatio), p.Status, p.StarvationStatus,
			p.RunningOperationCount, p.PendingOperationCount)
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
