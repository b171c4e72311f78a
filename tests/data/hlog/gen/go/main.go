// The .hlog of HdrHistogram's Go implementation (github.com/HdrHistogram/hdrhistogram-go): values.md's values
// through its HistogramLogWriter, with a StartTime line, the legend and a tagged interval; its own percentiles
// of the three untagged intervals merged to go-hdrhistogram.json. Base time left at its default 0 ("absolute
// time stamps", as its documentation says): v1.1.2 then writes the start in milliseconds where the format has
// seconds, and the end time where the format has the interval length (log_writer.go), as any user gets.
//
//	cd tests/data/hlog/gen/go && go run . ../..
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

const startS = 1700000000

func value(k, j int64) int64 { return 1000 + ((k*100000+j)*7919)%1000003 }

func main() {
	out := os.Args[1]
	f, err := os.Create(filepath.Join(out, "go-hdrhistogram.hlog"))
	if err != nil {
		panic(err)
	}
	defer f.Close()
	w := hdrhistogram.NewHistogramLogWriter(f)
	must(w.OutputComment("[Logged with github.com/HdrHistogram/hdrhistogram-go v1.1.2, tests/data/hlog/gen/go]"))
	must(w.OutputLogFormatVersion())
	must(w.OutputStartTime(startS * 1000))
	must(w.OutputLegend())
	total := hdrhistogram.New(1, 3600000000000, 3)
	for k := int64(0); k < 4; k++ {
		h := hdrhistogram.New(1, 3600000000000, 3)
		n := int64(10000)
		if k == 3 {
			n = 1000
			h.SetTag("udp")
		}
		for j := int64(0); j < n; j++ {
			must(h.RecordValue(value(k, j)))
		}
		if k == 2 {
			must(h.RecordValue(5000000000))
		}
		h.SetStartTimeMs((startS + k) * 1000)
		h.SetEndTimeMs((startS + k + 1) * 1000)
		must(w.OutputIntervalHistogram(h))
		if k < 3 {
			total.Merge(h)
		}
	}
	pct := map[string]int64{}
	for _, p := range []float64{50, 90, 99, 99.9, 99.99, 100} {
		pct[fmt.Sprintf("%g", p)] = total.ValueAtQuantile(p)
	}
	ref := map[string]any{"implementation": "hdrhistogram-go v1.1.2", "count": total.TotalCount(),
		"min": total.Min(), "max": total.Max(), "percentiles": pct}
	b, _ := json.MarshalIndent(ref, "", " ")
	must(os.WriteFile(filepath.Join(out, "go-hdrhistogram.json"), append(b, '\n'), 0o644))
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}
