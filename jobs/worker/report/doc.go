// Package report is everything the bot writes for people on GitHub: the
// status comment of a job, its final comment, the pull request body and
// the note that completes a draft, check run summaries, a round's replies
// on its pull request and in review threads, and the short replies to
// triggers (refusals, help, "already working", …).
//
// Every text is an embedded template (templates/*.md.tmpl) rendered with
// missingkey=error and golden-tested (testdata/*.golden; go test -update
// rewrites them). Text written by the model or by whoever opened an issue
// goes through Neutralize (and PlainTitle for titles) before it is posted
// under the bot's name. The words the texts use for outcomes, exit
// statuses and GitHub's failures are pure functions here too, so the
// worker decides what happened and this package alone says it.
package report
