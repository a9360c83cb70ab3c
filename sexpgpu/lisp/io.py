"""Streams: print/prin1/princ/terpri/write-string..., format, and string streams (output
and input: read-line, read-char, read).

The interpreter's `*standard-output*` writes to `interp.out` (stdout for `eval`,
stderr during check/run). String output streams collect text for
`with-output-to-string`.
"""

from __future__ import annotations

from typing import Any

from sexpgpu.lisp.format_ import format_to_string, format_with_rest
from sexpgpu.lisp.forms import args_of
from sexpgpu.lisp.printer import prin1_to_string, princ_to_string, with_options
from sexpgpu.lisp.reader import Reader
from sexpgpu.lisp.registry import Builtin, builtin, keywords, special
from sexpgpu.lisp.types import MV, NIL, Char, T, intern, keyword, lisp_list, to_py

STANDARD_OUTPUT = intern("*STANDARD-OUTPUT*")


class InterpreterStream:
    """The interpreter's own output (what *standard-output* starts as)."""

    __slots__ = ("interp",)

    def __init__(self, interp):
        self.interp = interp

    def write(self, text: str) -> None:
        self.interp.write(text)

    def at_line_start(self) -> bool:
        return self.interp.at_line_start

    def column(self) -> int:
        return self.interp.column

    def lisp_repr(self, escape: bool) -> str:
        return "#<SYNONYM-STREAM :SYMBOL SB-SYS:*STDOUT* {1000000000}>"


class StringStream:
    """make-string-output-stream: text accumulates until get-output-stream-string."""

    __slots__ = ("parts", "line_start", "col")

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.line_start = True
        self.col = 0

    def write(self, text: str) -> None:
        if text:
            self.parts.append(text)
            self.line_start = text.endswith("\n")
            self.col = _advance(self.col, text)

    def at_line_start(self) -> bool:
        return self.line_start

    def column(self) -> int:
        return self.col

    def lisp_repr(self, escape: bool) -> str:
        return f"#<SB-IMPL::STRING-OUTPUT-STREAM {{{id(self):X}}}>"


def _advance(column: int, text: str) -> int:
    newline = text.rfind("\n")
    return column + len(text) if newline < 0 else len(text) - newline - 1


def _layout(obj: Any, escape: bool, column: int) -> str:
    # deferred: a program that prints nothing (the usual `sexpgpu check`) never needs
    # the pretty printer
    from sexpgpu.lisp.pretty import layout

    return layout(obj, escape, column)


def stream_of(interp, designator: Any):
    if designator is NIL or designator is T:
        return interp.globals.get(STANDARD_OUTPUT) or InterpreterStream(interp)
    if hasattr(designator, "write") and hasattr(designator, "at_line_start"):
        return designator
    raise TypeError("not a stream")


def install(interp) -> None:
    stream = InterpreterStream(interp)
    for name in ("*STANDARD-OUTPUT*", "*TERMINAL-IO*", "*ERROR-OUTPUT*", "*TRACE-OUTPUT*"):
        interp.set_global(name, stream)
    # printer variables exist (so programs may bind them) but only their defaults print
    for name, value in (("*PRINT-BASE*", 10), ("*PRINT-PRETTY*", T), ("*PRINT-ESCAPE*", T),
                        ("*PRINT-READABLY*", NIL), ("*PRINT-CIRCLE*", NIL),
                        ("*READ-DEFAULT-FLOAT-FORMAT*", intern("SINGLE-FLOAT")),
                        ("*GENSYM-COUNTER*", 1), ("*PRINT-CASE*", keyword("UPCASE")),
                        ("*PRINT-LEVEL*", NIL), ("*PRINT-LENGTH*", NIL), ("*PRINT-LINES*", NIL),
                        ("*PRINT-RADIX*", NIL), ("*PRINT-ARRAY*", T), ("*PRINT-GENSYM*", T),
                        ("*PRINT-RIGHT-MARGIN*", NIL), ("*PRINT-MISER-WIDTH*", NIL),
                        ("*READ-BASE*", 10), ("*READ-EVAL*", T), ("*READ-SUPPRESS*", NIL),
                        ("*BREAK-ON-SIGNALS*", NIL)):
        interp.set_global(name, value)


@builtin("PRINT", interp=True)
def lisp_print(interp, obj, stream=NIL):
    out = stream_of(interp, stream)
    out.write("\n" + _layout(obj, True, 0) + " ")
    return obj


@builtin("PRIN1", interp=True)
def lisp_prin1(interp, obj, stream=NIL):
    out = stream_of(interp, stream)
    out.write(_layout(obj, True, out.column()))
    return obj


@builtin("PRINC", interp=True)
def lisp_princ(interp, obj, stream=NIL):
    out = stream_of(interp, stream)
    out.write(_layout(obj, False, out.column()))
    return obj


@builtin("PPRINT", interp=True)
def lisp_pprint(interp, obj, stream=NIL):
    stream_of(interp, stream).write("\n" + prin1_to_string(obj))
    return MV(())


@builtin("WRITE", interp=True)
def lisp_write(interp, obj, *options):
    opts = keywords(options, ("STREAM", "ESCAPE", "READABLY", "PRETTY", "CASE", "BASE",
                              "RADIX", "LEVEL", "LENGTH", "CIRCLE", "ARRAY", "GENSYM"))
    show = prin1_to_string if opts.get("ESCAPE", T) is not NIL else princ_to_string
    text = with_options(opts, lambda: show(obj))
    stream_of(interp, opts.get("STREAM", NIL)).write(text)
    return obj


@builtin("TERPRI", interp=True)
def terpri(interp, stream=NIL):
    stream_of(interp, stream).write("\n")
    return NIL


@builtin("FRESH-LINE", interp=True)
def fresh_line(interp, stream=NIL):
    out = stream_of(interp, stream)
    if out.at_line_start():
        return NIL
    out.write("\n")
    return T


@builtin("WRITE-STRING", interp=True)
def write_string(interp, text, stream=NIL, *options):
    opts = keywords(options, ("START", "END"))
    end = opts.get("END", NIL)
    stream_of(interp, stream).write(text[opts.get("START", 0): None if end is NIL else end])
    return text


@builtin("WRITE-LINE", interp=True)
def write_line(interp, text, stream=NIL, *options):
    write_string(interp, text, stream, *options)
    stream_of(interp, stream).write("\n")
    return text


@builtin("WRITE-CHAR", interp=True)
def write_char(interp, char, stream=NIL):
    if type(char) is not Char:
        raise TypeError("write-char")
    stream_of(interp, stream).write(char.ch)
    return char


@builtin("FINISH-OUTPUT", "FORCE-OUTPUT", "CLEAR-OUTPUT")
def finish_output(stream=NIL):
    return NIL


@builtin("FORMAT", interp=True)
def lisp_format(interp, destination, control, *args):
    if type(control) is not str and type(control).__name__ in ("Closure", "Builtin"):
        return _format_with_function(interp, destination, control, args)
    if destination is NIL:
        return format_to_string(interp, control, list(args))
    if type(destination) is str:
        raise TypeError("format to a string with a fill pointer is not supported")
    out = stream_of(interp, destination)
    text = format_to_string(interp, control, list(args), out.at_line_start(), out.column())
    interp.note_alloc(len(text) // 8)
    out.write(text)
    return NIL


def _format_with_function(interp, destination: Any, fn: Any, args: tuple) -> Any:
    """(format dest (formatter "...") args...): fn writes to the stream itself."""
    if destination is NIL:
        stream = StringStream()
        interp.call1(fn, stream, *args)
        return "".join(stream.parts)
    if type(destination) is str:
        raise TypeError("format to a string with a fill pointer is not supported")
    interp.call1(fn, stream_of(interp, destination), *args)
    return NIL


@builtin("%FORMATTER-RUN", interp=True)
def formatter_run(interp, stream, control, args):
    """The body of a (formatter control) function: prints, returns the unused arguments."""
    out = stream_of(interp, stream)
    text, rest = format_with_rest(interp, control, to_py(args), out.at_line_start(),
                                  out.column())
    out.write(text)
    return lisp_list(rest)


@special("FORMATTER")
def sf_formatter(interp, form, env):
    """(formatter control): a function of a stream and arguments that prints them as
    format with control would, returning the arguments control did not use"""
    control = interp.eval1(args_of(form, 1, 1, "(formatter control-string)")[0], env)
    if type(control) is not str:
        raise TypeError("lisp: formatter needs a control string")

    def run(stream, *args):
        return formatter_run(interp, stream, control, lisp_list(args))

    return Builtin("FORMATTER", run)


class StringInputStream:
    """make-string-input-stream / with-input-from-string: reads from a string."""

    __slots__ = ("text", "pos")

    def __init__(self, text: str, start: int = 0, end: Any = NIL):
        self.text = text[: None if end is NIL else end]
        self.pos = start

    def lisp_repr(self, escape: bool) -> str:
        return f"#<SB-IMPL::STRING-INPUT-STREAM {{{id(self):X}}}>"


def _eof(stream, eof_error_p, eof_value):
    if eof_error_p is not NIL:
        raise ValueError("lisp: end of file on a string stream")
    return eof_value


@builtin("MAKE-STRING-INPUT-STREAM")
def make_string_input_stream(text, start=0, end=NIL):
    return StringInputStream(text, start, end)


@builtin("READ-LINE")
def read_line(stream, eof_error_p=T, eof_value=NIL, recursive_p=NIL):
    if stream.pos >= len(stream.text):
        return MV((_eof(stream, eof_error_p, eof_value), T))
    end = stream.text.find("\n", stream.pos)
    if end < 0:
        line, stream.pos = stream.text[stream.pos:], len(stream.text)
        return MV((line, T))
    line, stream.pos = stream.text[stream.pos:end], end + 1
    return MV((line, NIL))


@builtin("READ-CHAR")
def read_char(stream, eof_error_p=T, eof_value=NIL, recursive_p=NIL):
    if stream.pos >= len(stream.text):
        return _eof(stream, eof_error_p, eof_value)
    stream.pos += 1
    return Char(stream.text[stream.pos - 1])


@builtin("PEEK-CHAR")
def peek_char(peek_type=NIL, stream=NIL, eof_error_p=T, eof_value=NIL, recursive_p=NIL):
    if peek_type is not NIL:
        while stream.pos < len(stream.text) and stream.text[stream.pos].isspace():
            stream.pos += 1
    if stream.pos >= len(stream.text):
        return _eof(stream, eof_error_p, eof_value)
    return Char(stream.text[stream.pos])


@builtin("UNREAD-CHAR")
def unread_char(char, stream):
    stream.pos = max(0, stream.pos - 1)
    return NIL


@builtin("READ")
def lisp_read(stream, eof_error_p=T, eof_value=NIL, recursive_p=NIL):
    reader = Reader(stream.text, "<read>")
    forms = reader.read_all(stream.pos, 1)
    if not forms:
        stream.pos = len(stream.text)
        return _eof(stream, eof_error_p, eof_value)
    stream.pos = reader.end
    return forms[0]


@builtin("MAKE-STRING-OUTPUT-STREAM")
def make_string_output_stream(*options):
    return StringStream()


@builtin("GET-OUTPUT-STREAM-STRING")
def get_output_stream_string(stream):
    text = "".join(stream.parts)
    stream.parts.clear()
    return text


builtin("STREAMP", "OUTPUT-STREAM-P")(
    lambda x: T if isinstance(x, (StringStream, InterpreterStream)) else NIL)

