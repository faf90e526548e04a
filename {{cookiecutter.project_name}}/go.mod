module {{cookiecutter.module}}

go 1.26

tool github.com/hookledger/hookledger/cmd/hookledger

require github.com/hookledger/hookledger v{{cookiecutter._hookledger_version}}
