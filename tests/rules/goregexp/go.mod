module promhpa.local/goregexp

go 1.22
