// Command promqlparse checks PromQL syntax with the upstream Prometheus parser.
//
// Input on stdin: JSON lines {"name": "...", "query": "..."} (Grafana variables already substituted).
// Output on stdout: one JSON line per input, {"name": "...", "error": ""} when the query parses.
// Exit status 0 even when queries fail to parse: the caller (tests/stack) decides.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/prometheus/prometheus/promql/parser"
)

type item struct {
	Name  string `json:"name"`
	Query string `json:"query"`
}

type result struct {
	Name  string `json:"name"`
	Error string `json:"error"`
	Type  string `json:"type,omitempty"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<20)
	out := json.NewEncoder(os.Stdout)
	p := parser.NewParser(parser.Options{})
	for in.Scan() {
		var it item
		if err := json.Unmarshal(in.Bytes(), &it); err != nil {
			fmt.Fprintln(os.Stderr, "promqlparse: bad input line:", err)
			os.Exit(2)
		}
		res := result{Name: it.Name}
		expr, err := p.ParseExpr(it.Query)
		if err != nil {
			res.Error = err.Error()
		} else {
			res.Type = string(expr.Type())
		}
		if err := out.Encode(res); err != nil {
			os.Exit(2)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "promqlparse:", err)
		os.Exit(2)
	}
}
