#!/usr/bin/env bash
# git: init a repository, commit a few hundred files in 20 commits (fixed
# authors and dates, so the object ids are the same in both runs), then log,
# diff, gc (which runs pack-objects with threads) and fsck.
source "$(dirname "$0")/common.sh"
need git

git_workload() {
  set -eo pipefail
  export GIT_AUTHOR_NAME=Mallard GIT_AUTHOR_EMAIL=mallard@example.org
  export GIT_COMMITTER_NAME=Mallard GIT_COMMITTER_EMAIL=mallard@example.org
  export GIT_CONFIG_NOSYSTEM=1 HOME=$PWD
  git init -q -b main repo
  cd repo
  for commit in $(seq 1 20); do
    for f in $(seq 1 40); do
      n=$(( (commit * 40 + f) % 400 ))
      mkdir -p "dir$(( n % 10 ))"
      seq "$n" $(( n + commit * 50 )) | sed "s/^/line $commit $f /" >"dir$(( n % 10 ))/file$n.txt"
    done
    git add -A
    GIT_AUTHOR_DATE="2024-01-$(printf %02d "$commit")T12:00:00Z" \
      GIT_COMMITTER_DATE="2024-01-$(printf %02d "$commit")T12:00:00Z" git commit -q -m "commit $commit"
  done
  git log --stat --format='%H %s %ad' | md5sum
  git log --format='%H %T %s' | sed -n 1,5p  # (not head: SIGPIPE would fail the pipe)
  git diff --stat HEAD~10 HEAD | tail -n 1
  git diff HEAD~15 HEAD | md5sum
  git gc -q --aggressive
  git fsck --strict --no-progress | sort  # (its stderr carries mallard's statistics)
  git rev-list --all --objects | sort | md5sum
  git cat-file --batch-all-objects --batch-check='%(objectname) %(objecttype) %(objectsize)' | md5sum
  git grep -c 'line 20 1' | sort | md5sum
}
export -f git_workload
compare_runs git 1048576 bash -c git_workload
