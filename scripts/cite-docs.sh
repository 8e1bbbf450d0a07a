#!/usr/bin/env bash
# Rewrite citations of the behaviour notes that used to live outside the repository
# (corefile.md, kubernetes-records.md, plugins.md, operations-contract.md, style.md under
# ../shared/docs) into citations of the repository's own reference in docs/:
#
#   corefile.md §X            -> docs/corefile.md §X
#   kubernetes-records.md §X  -> docs/records.md §X
#   plugins.md, NAME          -> docs/plugins.md, NAME
#   operations-contract.md    -> docs/operations.md
#   ../shared/docs/…, "(outside the repo)" in docs/ARCHITECTURE.md -> docs/
#
# Runs over every file git knows (tracked, or untracked and not ignored) from the repository
# root. Idempotent: a name already preceded by a path (`docs/corefile.md`) is left alone, so a
# second run changes nothing and `docs/docs/` is never produced. Markdown link targets
# (`](corefile.md)`, relative links between files of docs/) are left alone too.
# test/docs/citations.test.ts checks the result (and runs this script on a scratch repository).
set -euo pipefail

cd "$(git rev-parse --show-toplevel)"

self='scripts/cite-docs.sh'
checker='test/docs/citations.test.ts'
pattern='corefile\.md|kubernetes-records|operations-contract|plugins\.md|style\.md|shared/docs|outside the repo'

mapfile -d '' files < <(
  git ls-files -z --cached --others --exclude-standard |
    grep -zv -e "^${self}\$" -e "^${checker}\$" |
    xargs -0 -r grep -sIlZE -- "$pattern" || true
)

if [ "${#files[@]}" -eq 0 ]; then
  echo "cite-docs: nothing to rewrite"
  exit 0
fi

# The byte `§` is matched as its UTF-8 sequence (no `use utf8`), which is what the files hold.
# Order matters: the specific phrases first, then the generic renames.
perl -pi -e '
  # docs/ARCHITECTURE.md: the pointer outside the repository.
  s{`\.\./shared/docs/\*\.md` \(outside the repo\) for the behaviour to match}{the reference in `docs/` (`docs/corefile.md`, `docs/records.md`, `docs/plugins.md`, `docs/operations.md`) for the behaviour clusterdns implements}g;
  s{ ?\(outside the repo\)}{}g;
  s{(?:\.\./)*(?:/work/)?shared/docs/}{docs/}g;

  # Phrases that would read badly after a plain rename.
  s{\bdocs (?=kubernetes-records\.md)}{}g;
  # (operations-contract.md and style.md were lettered a)–e); docs/operations.md and
  # docs/ARCHITECTURE.md are not, so the letter goes.)
  s{operations-contract pain point 5 allows a}{docs/operations.md, "Forwarding loops", weighs a}g;
  s{operations-contract(?:\.md)?,? pain point 5\b}{docs/operations.md, "Forwarding loops"}g;
  s{operations-contract(?:\.md)?,? pain point [0-9]+}{docs/operations.md}g;
  s{operations-contract\.md ?§ ?[a-e](?:\.[0-9]+)?\b}{operations-contract.md}g;
  s{style\.md habit 1\b}{docs/plugins.md, "Plugin READMEs"}g;
  s{style\.md,? habit [0-9]+}{docs/ARCHITECTURE.md, "Conventions"}g;
  s{style\.md ?§ ?[a-e](?:\.[0-9]+)?\b}{style.md}g;

  # Renamed documents, with or without a docs/ prefix already.
  s{(?<![\w./-])(?<!\]\()kubernetes-records\.md}{docs/records.md}g;
  s{\bdocs/kubernetes-records\.md}{docs/records.md}g;
  s{(?<![\w./-])(?<!\]\()operations-contract\.md}{docs/operations.md}g;
  s{\bdocs/operations-contract\.md}{docs/operations.md}g;
  s{(?<![\w./-])(?<!\]\()style\.md}{docs/ARCHITECTURE.md}g;

  # Same name, now in docs/.
  s{(?<![\w./-])(?<!\]\()corefile\.md}{docs/corefile.md}g;
  s{(?<![\w./-])(?<!\]\()plugins\.md}{docs/plugins.md}g;
' -- "${files[@]}"

echo "cite-docs: checked ${#files[@]} file(s)"
