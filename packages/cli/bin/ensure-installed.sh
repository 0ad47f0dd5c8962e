#!/bin/sh
# Runs before `npm start` and `npm test` so that each is one command on a fresh
# clone: install when node_modules is missing or older than the lockfile. The
# `node` devDependency then puts Node 24 first on PATH for every npm script.
set -e
cd "$(dirname "$0")/../../.."
marker=node_modules/.package-lock.json
if [ ! -x node_modules/.bin/node ] || [ ! -f "$marker" ] || [ package-lock.json -nt "$marker" ] || [ package.json -nt "$marker" ]; then
  echo "casebook: installing dependencies (npm install)…" >&2
  npm install --no-audit --no-fund --loglevel=error
fi
