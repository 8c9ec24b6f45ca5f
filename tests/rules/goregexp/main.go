// Go's regexp, for promhpa's regex differential test (test tooling, never part of the
// product). Each input line is a JSON case {pattern, template, names}; each output line is
// {error} when Go refuses the pattern, else, per name, whether it matched and what
// ExpandString of the template gave (prometheus-adapter's naming: FindStringSubmatchIndex,
// then ExpandString).
package main

import (
	"bufio"
	"encoding/json"
	"os"
	"regexp"
)

type input struct {
	Pattern  string   `json:"pattern"`
	Template string   `json:"template"`
	Names    []string `json:"names"`
}

type result struct {
	Matched  bool   `json:"matched"`
	Expanded string `json:"expanded"`
}

type output struct {
	Error   string   `json:"error,omitempty"`
	Groups  int      `json:"groups"`
	Results []result `json:"results"`
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 16<<20)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var c input
		if err := json.Unmarshal(in.Bytes(), &c); err != nil {
			panic(err)
		}
		out := output{Results: []result{}}
		rx, err := regexp.Compile(c.Pattern)
		if err != nil {
			out.Error = err.Error()
		} else {
			out.Groups = rx.NumSubexp()
			for _, name := range c.Names {
				m := rx.FindStringSubmatchIndex(name)
				r := result{Matched: m != nil}
				if m != nil {
					r.Expanded = string(rx.ExpandString(nil, c.Template, name, m))
				}
				out.Results = append(out.Results, r)
			}
		}
		if err := enc.Encode(out); err != nil {
			panic(err)
		}
	}
	if err := in.Err(); err != nil {
		panic(err)
	}
}
