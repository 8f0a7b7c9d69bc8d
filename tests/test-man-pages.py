#!/usr/bin/env python3
"""test-man-pages.py - the man pages, as installed and as man-db finds them.

Usage: test-man-pages.py CASE BUILD_DIR SOURCE_DIR SHMD SHMCTL

The pages are installed by `meson install --destdir TMP --tags man` (the
build's own install rules), then:

  lint      every page passes `groff -man -ww -z` silent (what man renders
            with) and `mandoc -Tlint -W warning` with nothing but the empty
            paragraph macros scdoc writes for every blank line; every link
            page is one `.so` line to a page that exists
  found     `man -w` (man-db, the real one) finds shmd(8), shmd.conf(5),
            libshmf(3) and shmctl(1) ahead of the system call shmctl(2),
            whether our directory comes first in MANPATH or last, and every
            function shmf.h declares, on a page whose SYNOPSIS declares it
  shmd      every option of `shmd --help` is in shmd(8)'s OPTIONS
  shmctl    every verb of `shmctl --help` has its subsection in shmctl(1)'s
            VERBS, every option of `shmctl help VERB` is in that
            subsection, every global option in OPTIONS
  keys      every row of `shmd --config-keys` is a term of its section's
            subsection in shmd.conf(5)

Each failure is printed on a line of its own; exit status 1 if any.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILS = []


def fail(msg):
    FAILS.append(msg)
    print("FAIL: " + msg)


def run(argv, env=None, check=True):
    p = subprocess.run(argv, capture_output=True, text=True, env=env)
    if check and p.returncode != 0:
        raise SystemExit("%s: exit %d: %s" % (" ".join(argv), p.returncode, p.stderr.strip()))
    return p


def install(build, dest):
    """The man pages as meson installs them; returns the man directory."""
    run(["meson", "install", "-C", build, "--destdir", dest, "--tags", "man", "--no-rebuild", "--quiet"])
    found = [root for root, dirs, _ in os.walk(dest) if "man1" in dirs and "man3" in dirs]
    if len(found) != 1:
        raise SystemExit("no man directory (man1, man3) installed under %s: %s" % (dest, found))
    return found[0]


def pages(mandir):
    """(path, is_link) of every installed page."""
    out = []
    for sub in sorted(os.listdir(mandir)):
        for name in sorted(os.listdir(os.path.join(mandir, sub))):
            path = os.path.join(mandir, sub, name)
            with open(path) as f:
                text = f.read()
            out.append((path, text.startswith(".so ")))
    if len(out) < 10:
        raise SystemExit("only %d pages installed in %s" % (len(out), mandir))
    return out


def render(path):
    """The page as plain text: mandoc -Tascii, overstrikes removed, no wrapping."""
    text = run(["mandoc", "-Tascii", "-O", "width=400", path]).stdout
    return re.sub(r".\x08", "", text)


def sections(text):
    """{SECTION: text} of a rendered page (headers at column 0)."""
    out, cur = {}, None
    for line in text.splitlines()[1:]:
        if line and not line[0].isspace():
            cur = line.strip()
            out[cur] = ""
        elif cur is not None:
            out[cur] += line + "\n"
    return out


def subsections(text):
    """{subsection: text} of a section's text (headers indented 3 spaces)."""
    out, cur = {}, None
    for line in text.splitlines():
        if re.match(r"^ {3}\S", line):
            cur = line.strip()
            out[cur] = ""
        elif cur is not None:
            out[cur] += line + "\n"
    return out


def has_token(text, token):
    return re.search(r"(?<![\w-])" + re.escape(token) + r"(?![\w-])", text) is not None


def options_of(help_text):
    return sorted(set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", help_text)))


def case_lint(mandir):
    for path, is_link in pages(mandir):
        name = os.path.relpath(path, mandir)
        if is_link:
            with open(path) as f:
                lines = f.read().splitlines()
            m = re.fullmatch(r"\.so (man\d/[\w.]+)", lines[0]) if len(lines) == 1 else None
            if m is None or not os.path.isfile(os.path.join(mandir, m.group(1))):
                fail("%s: not one .so line to an installed page: %r" % (name, lines))
            continue
        g = run(["groff", "-man", "-ww", "-z", "-Tutf8", path], check=False)
        if g.returncode != 0 or g.stderr.strip():
            fail("%s: groff -ww: exit %d: %s" % (name, g.returncode, g.stderr.strip()))
        m = run(["mandoc", "-Tlint", "-W", "warning", path], check=False)
        for line in (m.stdout + m.stderr).splitlines():
            if "skipping paragraph macro" not in line:
                fail("%s: mandoc -Tlint: %s" % (name, line))
        print("%s: groff and mandoc clean" % name)


def man_w(manpath, *args):
    env = dict(os.environ, MANPATH=manpath)
    env.pop("MANSECT", None)
    p = run(["man", "-w"] + list(args), env=env, check=False)
    return p.stdout.strip() if p.returncode == 0 else None


def public_functions(src):
    with open(os.path.join(src, "include", "shmf.h")) as f:
        text = f.read()
    names = re.findall(r"^SHMF_API\b[^;(]*?\b(shmf_\w+)\s*\(", text, re.M)
    if len(names) < 10:
        raise SystemExit("only %d functions found in shmf.h: %s" % (len(names), names))
    return names


def case_found(mandir, src):
    system = run(["manpath"], check=False).stdout.strip() or "/usr/share/man"
    syscall = man_w(system, "2", "shmctl")
    if syscall is None:
        fail("the system call's page shmctl(2) is not installed (manpages-dev): nothing to be found ahead of")
    for order, manpath in (("first", mandir + ":" + system), ("last", system + ":" + mandir)):
        got = man_w(manpath, "shmctl")
        want = os.path.join(mandir, "man1", "shmctl.1")
        if got != want:
            fail("man shmctl with our pages %s in MANPATH opens %s, not %s" % (order, got, want))
        else:
            print("man shmctl (ours %s in MANPATH): %s, ahead of %s" % (order, got, syscall))
    manpath = mandir + ":" + system
    for page, sect in (("shmd", "8"), ("shmd.conf", "5"), ("libshmf", "3")):
        want = os.path.join(mandir, "man" + sect, page + "." + sect)
        if man_w(manpath, page) != want:
            fail("man %s opens %s, not %s" % (page, man_w(manpath, page), want))
    for fn in public_functions(src):
        got = man_w(manpath, fn)
        if got is None or not got.startswith(mandir + "/"):
            fail("man %s: no page of ours (%s)" % (fn, got))
            continue
        synopsis = sections(render(got)).get("SYNOPSIS", "")
        if not re.search(r"\b" + fn + r"\(", synopsis):
            fail("man %s opens %s, whose SYNOPSIS does not declare %s()" % (fn, got, fn))
        else:
            print("man %s: %s" % (fn, os.path.relpath(got, mandir)))


def case_shmd(mandir, shmd):
    help_text = run([shmd, "--help"]).stdout
    opts = options_of(help_text)
    if "--help" not in opts or len(opts) < 10:
        raise SystemExit("shmd --help gave too few options: %s" % opts)
    section = sections(render(os.path.join(mandir, "man8", "shmd.8"))).get("OPTIONS", "")
    for opt in opts:
        if not has_token(section, opt):
            fail("shmd --help has %s; shmd(8)'s OPTIONS does not" % opt)
    print("shmd(8): %d options: %s" % (len(opts), " ".join(opts)))


def shmctl_verbs(help_text):
    part = help_text.split("Verbs:", 1)[1].split("Options:", 1)
    verbs = re.findall(r"^  (\S+)\s{2,}", part[0], re.M)
    return verbs, options_of(part[1])


def case_shmctl(mandir, shmctl):
    verbs, globals_ = shmctl_verbs(run([shmctl, "--help"]).stdout)
    if len(verbs) < 20 or "--instance" not in globals_:
        raise SystemExit("shmctl --help: too few verbs or options: %s %s" % (verbs, globals_))
    page = sections(render(os.path.join(mandir, "man1", "shmctl.1")))
    for opt in globals_:
        if not has_token(page.get("OPTIONS", ""), opt):
            fail("shmctl --help has option %s; shmctl(1)'s OPTIONS does not" % opt)
    subs = subsections(page.get("VERBS", ""))
    count = 0
    for verb in verbs:
        if verb not in subs:
            fail("shmctl --help has verb %s; shmctl(1)'s VERBS has no subsection for it" % verb)
            continue
        # Only the verb's own part: the usage line repeats the global options.
        text = run([shmctl, "help", verb]).stdout.split("] " + verb, 1)[-1]
        for opt in options_of(text):
            count += 1
            if not has_token(subs[verb], opt):
                fail("shmctl help %s has %s; its subsection in shmctl(1) does not" % (verb, opt))
    print("shmctl(1): %d verbs, %d verb options, global %s" % (len(verbs), count, " ".join(globals_)))


def case_keys(mandir, shmd):
    rows = [line.split("\t") for line in run([shmd, "--config-keys"]).stdout.splitlines()]
    if len(rows) < 60 or any(len(r) != 4 for r in rows):
        raise SystemExit("shmd --config-keys: %d rows, not 4 fields each" % len(rows))
    subs = subsections(sections(render(os.path.join(mandir, "man5", "shmd.conf.5"))).get("SECTIONS", ""))
    for section, key, value, _ in rows:
        text = subs.get("[" + section + "]")
        if text is None:
            fail("[%s]: no subsection in shmd.conf(5)" % section)
        elif not re.search(r"^ +" + re.escape(key) + " = ", text, re.M):
            fail("[%s] %s: not described in shmd.conf(5) (a line '%s = %s')" % (section, key, key, value))
    print("shmd.conf(5): %d keys in %d sections" % (len(rows), len({r[0] for r in rows})))


def main():
    case, build, src, shmd, shmctl = sys.argv[1:6]
    for tool in ("meson", "scdoc", "mandoc", "groff", "man"):
        if shutil.which(tool) is None:
            raise SystemExit("%s not found (scripts/install-deps.sh installs it)" % tool)
    with tempfile.TemporaryDirectory(prefix="shmf-man-") as dest:
        mandir = install(build, dest)
        if case == "lint":
            case_lint(mandir)
        elif case == "found":
            case_found(mandir, src)
        elif case == "shmd":
            case_shmd(mandir, shmd)
        elif case == "shmctl":
            case_shmctl(mandir, shmctl)
        elif case == "keys":
            case_keys(mandir, shmd)
        else:
            raise SystemExit("unknown case " + case)
    print("%d failures" % len(FAILS))
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
