module lightfleet.test/pause

go 1.24.0
