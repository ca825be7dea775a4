package pylayer

// Live is live for the tests: how many Python layer objects dsgd holds.
var Live = live
