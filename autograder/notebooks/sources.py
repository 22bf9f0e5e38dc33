"""A module's three files as the notebook builder reads them (:class:`ModuleSources`): the exercise's imports and
given code, the reference's bodies and helpers, the checks' names; and the docstrings made Markdown."""

from __future__ import annotations

import ast
import inspect
import re
import textwrap

from autograder.core import syntax
from autograder.core.course import Course, CourseError, Function, Module


def _segment(source: str, node: ast.stmt) -> str:
    """The source lines of a top-level statement, decorators included."""
    lines = source.splitlines()
    first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
    return "\n".join(lines[first - 1 : node.end_lineno])


# A top-level definition of a kit's file (a function or a class).
Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _definitions(tree: ast.Module) -> dict[str, Definition]:
    out: dict[str, Definition] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out[node.name] = node
    return out


def _is_docstring(stmt: ast.stmt) -> bool:
    return isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str)


def markdown(docstring: str) -> str:
    """A docstring in Markdown: reST ````code```` becomes ```code```."""
    text = inspect.cleandoc(docstring)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def drop_pytest_paragraphs(text: str) -> str:
    """Paragraphs telling how to run pytest do not belong in a notebook."""
    paragraphs = text.split("\n\n")
    kept: list[str] = []
    for para in paragraphs:
        if "pytest" in para:
            if kept and not kept[-1].rstrip().endswith((".", "!", "?")):
                # "... Run the checks with" introduced the dropped command: drop that sentence.
                sentences = re.split(r"(?<=[.!?])\s+", kept[-1].strip())
                rest = " ".join(sentences[:-1])
                kept[-1] = rest
                if not rest:
                    kept.pop()
            continue
        kept.append(para)
    return "\n\n".join(p for p in kept if p.strip())


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _import_names(node: ast.stmt) -> set[str]:
    if isinstance(node, ast.Import):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, ast.ImportFrom):
        return {a.asname or a.name for a in node.names}
    return set()


def _reindent(body: str, indent: str) -> str:
    return textwrap.indent(textwrap.dedent(body), indent, lambda line: line.strip() != "")


class ModuleSources:
    """The three files of a module, parsed."""

    def __init__(self, course: Course, module: Module):
        self.module = module
        self.exercise = course.exercise_path(module.name).read_text(encoding="utf-8")
        self.solution = course.solution_path(module.name).read_text(encoding="utf-8")
        self.checks = course.checks_path(module.name).read_text(encoding="utf-8")
        self.exercise_tree = syntax.parse(self.exercise)
        self.solution_tree = syntax.parse(self.solution)
        self.stubs = _definitions(self.exercise_tree)
        self.references = _definitions(self.solution_tree)
        self.course_names = {fn.name for fn in module.functions}

    def docstring(self) -> str:
        return ast.get_docstring(self.exercise_tree, clean=True) or ""

    def setup_code(self) -> str:
        """The exercise file minus its docstring and the course functions, plus the reference's extra imports."""
        parts: list[str] = []
        imported: set[str] = set()
        for i, node in enumerate(self.exercise_tree.body):
            if i == 0 and _is_docstring(node):
                continue
            if getattr(node, "name", None) in self.course_names:
                continue
            imported |= _import_names(node)
            parts.append(_segment(self.exercise, node))
        extra = [
            _segment(self.solution, node)
            for node in self.solution_tree.body
            if isinstance(node, (ast.Import, ast.ImportFrom)) and not _import_names(node) <= imported
        ]
        if extra:
            parts.append("# also used by the reference solution")
            parts.extend(extra)
        return _join_statements(parts)

    def reference_helpers(self) -> dict[str, str]:
        """Top-level definitions of the reference that are neither imports, course functions nor in the exercise."""
        exercise_names = set(self.stubs) | {
            t.id
            for n in self.exercise_tree.body
            if isinstance(n, ast.Assign)
            for t in n.targets
            if isinstance(t, ast.Name)
        }
        helpers = {}
        for i, node in enumerate(self.solution_tree.body):
            if (i == 0 and _is_docstring(node)) or isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            names = (
                {node.name}
                if hasattr(node, "name")
                else {t.id for t in getattr(node, "targets", []) if isinstance(t, ast.Name)}
            )
            if names & self.course_names or names <= exercise_names:
                continue
            for name in names:
                helpers[name] = _segment(self.solution, node)
        return helpers

    def solution_cell(self, fn: Function) -> str:
        """The stub's signature and docstring around the reference, inside BEGIN/END SOLUTION."""
        stub, ref = self.stubs.get(fn.name), self.references.get(fn.name)
        if stub is None or ref is None:
            raise CourseError(f"{fn.qualname}: exercise and reference must both define it at top level")
        helpers = self.reference_helpers()
        needed = [helpers[name] for name in sorted(_names_used(ref) & set(helpers))]
        if isinstance(ref, ast.ClassDef):
            return self._class_cell(stub, ref, needed)
        if [ast.dump(d) for d in stub.decorator_list] == [ast.dump(d) for d in ref.decorator_list]:
            header_node = stub
            header_source = self.exercise
        else:
            # the decorators are part of the answer (e.g. @jax.jit): the reference's are kept
            header_node = ref
            header_source = self.solution
        return self._function_cell(header_node, header_source, stub, ref, needed)

    def _function_cell(self, header_node, header_source, stub, ref, helpers: list[str]) -> str:
        lines = header_source.splitlines()
        first = min([header_node.lineno] + [d.lineno for d in header_node.decorator_list])
        header = "\n".join(lines[first - 1 : header_node.body[0].lineno - 1])
        indent = " " * stub.body[0].col_offset
        out = [header]
        stub_lines = self.exercise.splitlines()
        if _is_docstring(stub.body[0]):
            out.append("\n".join(stub_lines[stub.body[0].lineno - 1 : stub.body[0].end_lineno]))
        out += [line for line in self._comments(stub)]
        out.append(f"{indent}### BEGIN SOLUTION")
        for helper in helpers:
            out.append(_reindent(helper, indent))
        out.append(_reindent(self._body(ref, self.solution), indent))
        out.append(f"{indent}### END SOLUTION")
        return "\n".join(out)

    def _comments(self, stub: ast.FunctionDef) -> list[str]:
        """The stub's ``# TODO`` comment lines (they teach), without its ``raise NotImplementedError``."""
        lines = self.exercise.splitlines()
        start = stub.body[0].end_lineno if _is_docstring(stub.body[0]) else stub.body[0].lineno - 1
        return [line for line in lines[start : stub.end_lineno] if line.strip().startswith("#")]

    @staticmethod
    def _body(node, source: str) -> str:
        body = node.body[1:] if _is_docstring(node.body[0]) and len(node.body) > 1 else node.body
        lines = source.splitlines()
        return "\n".join(lines[body[0].lineno - 1 : node.end_lineno])

    def _class_cell(self, stub: Definition, ref: ast.ClassDef, helpers: list[str]) -> str:
        """A class: the reference's class line, each method's body inside BEGIN/END SOLUTION."""
        lines = self.solution.splitlines()
        first = min([ref.lineno] + [d.lineno for d in ref.decorator_list])
        out = ["\n".join(lines[first - 1 : ref.body[0].lineno - 1])]
        if stub.body and _is_docstring(stub.body[0]):
            ex = self.exercise.splitlines()
            out.append("\n".join(ex[stub.body[0].lineno - 1 : stub.body[0].end_lineno]))
        stub_methods = _definitions(ast.Module(body=stub.body, type_ignores=[]))
        for node in ref.body:
            if _is_docstring(node):
                continue
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                out.append(_segment(self.solution, node))
                continue
            head_first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out.append("")
            out.append("\n".join(lines[head_first - 1 : node.body[0].lineno - 1]))
            indent = " " * node.body[0].col_offset
            doc = stub_methods.get(node.name)
            if doc is not None and doc.body and _is_docstring(doc.body[0]):
                ex = self.exercise.splitlines()
                out.append(_reindent("\n".join(ex[doc.body[0].lineno - 1 : doc.body[0].end_lineno]), indent))
            out.append(f"{indent}### BEGIN SOLUTION")
            for helper in helpers:
                out.append(_reindent(helper, indent))
            out.append(_reindent(self._body(node, self.solution), indent))
            out.append(f"{indent}### END SOLUTION")
        return "\n".join(out)

    def check_names(self) -> set[str]:
        """Test function names of the checks file."""
        return {
            node.name
            for node in syntax.parse(self.checks).body
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
        }


def _join_statements(parts: list[str]) -> str:
    """Imports together, definitions separated by a blank line."""
    out: list[str] = []
    for part in parts:
        grouped = part.startswith(("import ", "from ")) and out and out[-1].startswith(("import ", "from ", "#"))
        if out and not grouped:
            out.append("")
        out.append(part)
    return "\n".join(out).strip() + "\n" if out else ""
